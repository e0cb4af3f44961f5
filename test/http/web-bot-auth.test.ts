import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeaders } from 'web-bot-auth';
import { signerFromJWK } from 'web-bot-auth/crypto';
import { startServer, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// The Ed25519 test key of RFC 9421, appendix B.1.4, published by a signature agent on loopback.
const KEY = { kty: 'OKP', crv: 'Ed25519', d: 'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU', x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs' };
// Signed agents often send a browser's User-Agent: the signature says who they are.
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';

let directory: Server;
let directoryFetches = 0;
let server: ServerProcess;
let agent: string;

beforeAll(async () => {
  directory = createServer((req, res) => {
    directoryFetches++;
    if (req.url !== '/.well-known/http-message-signatures-directory') return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'application/http-message-signatures-directory+json' });
    res.end(JSON.stringify({ keys: [{ kty: KEY.kty, crv: KEY.crv, x: KEY.x }] }));
  });
  await new Promise<void>((resolve) => directory.listen(0, '127.0.0.1', resolve));
  agent = `http://127.0.0.1:${(directory.address() as AddressInfo).port}`;

  // The shipped content, with ChatGPT-User's signature agent moved to the local directory.
  const content = mkdtempSync(join(tmpdir(), 'agentnode-content-'));
  cpSync('content', content, { recursive: true });
  const families = join(content, 'bot-families.yaml');
  writeFileSync(families, readFileSync(families, 'utf8').replace("signature_agents: ['https://chatgpt.com']", `signature_agents: ['${agent}']`));
  server = await startServer({ CONTENT_DIR: content });
});
afterAll(async () => {
  await server.stop();
  directory.close();
});

async function signedGet(path: string, key: JsonWebKey, signatureAgent = `sig1="${agent}"`): Promise<number> {
  const url = server.url + path;
  const now = new Date();
  const sig = await signatureHeaders({ method: 'GET', url, headers: { 'signature-agent': signatureAgent } }, await signerFromJWK(key), { created: now, expires: new Date(now.getTime() + 60_000) });
  const res = await fetch(url, { headers: { 'User-Agent': CHROME, 'Signature-Agent': signatureAgent, Signature: sig.Signature, 'Signature-Input': sig['Signature-Input'] } });
  await res.arrayBuffer();
  return res.status;
}

/** The wall's row of `name` once `settledAt` signatures of it are checked (a key directory is fetched in the background). */
function species(name: string, settledAt: number): Promise<any> {
  return waitFor(
    async () => {
      const wall = (await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'User-Agent': CHROME } })).json()) as { species: any[] };
      return wall.species.find((s) => s.species === name);
    },
    { until: (row) => typeof row?.verification === 'object' && row.verification.verified + row.verification.unverified >= settledAt, what: `${name} with ${settledAt} settled verifications` },
  );
}

async function family(name: string): Promise<any> {
  const traffic = (await (await fetch(`${server.url}/bot-traffic.json`, { headers: { 'User-Agent': CHROME } })).json()) as { families: { family: string }[] };
  return traffic.families.find((f) => f.family === name);
}

describe('Web Bot Auth over HTTP', () => {
  it('counts a signed request with a browser User-Agent under the agent family, verified', async () => {
    expect(await signedGet('/api/convert', KEY)).toBe(200);
    expect(await signedGet('/api/citizens', KEY)).toBe(200);
    const row = await species('ChatGPT-User', 2);
    expect(row.hits).toBe(2);
    expect(row.verification).toEqual({ verified: 2, unverified: 0 });
    expect((await family('ChatGPT-User')).verification).toEqual({ method: 'web-bot-auth', verified: 2, failed: 0, unverifiable: 0 });
    expect(row.intelligence_class).toBe('Intelligence');
    expect(directoryFetches).toBe(1);
  });

  it('counts a signature by a key the agent does not publish as failed, and the species turns Cosplay', async () => {
    const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
    const stranger = await crypto.subtle.exportKey('jwk', pair.privateKey);
    for (let i = 0; i < 3; i++) expect(await signedGet('/llms.txt', stranger)).toBe(200);
    const row = await species('ChatGPT-User', 5);
    expect(row.verification).toEqual({ verified: 2, unverified: 3 });
    expect((await family('ChatGPT-User')).verification).toEqual({ method: 'web-bot-auth', verified: 2, failed: 3, unverifiable: 0 });
    expect(row.intelligence_class).toBe('Cosplay');
  });

  it('never fetches an agent that is not registered', async () => {
    const before = directoryFetches;
    expect(await signedGet('/api/convert', KEY, 'sig1="http://127.0.0.1:9/"')).toBe(200);
    expect(directoryFetches).toBe(before);
    const traffic = (await (await fetch(`${server.url}/bot-traffic.json`, { headers: { 'User-Agent': CHROME } })).json()) as { families: { family: string; requests: number }[] };
    expect(traffic.families.find((f) => f.family === 'ChatGPT-User')?.requests).toBe(5);
  });
});
