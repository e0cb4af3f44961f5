import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { component, createSignature, webcrypto } from 'http-message-sig';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helpers, jwkToKeyID, signatureHeaders } from 'web-bot-auth';
import { signerFromJWK } from 'web-bot-auth/crypto';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// The Ed25519 test key of RFC 9421, appendix B.1.4: the agent publishes it too, and it must never verify.
const RFC9421_KEY = {
  kty: 'OKP',
  crv: 'Ed25519',
  d: 'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU',
  x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs',
};
// Signed agents often send a browser's User-Agent: the signature says who they are.
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';
const WELL_KNOWN = '/.well-known/http-message-signatures-directory';

interface Key {
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
  keyid: string;
}

async function keyOf(privateJwk?: JsonWebKey): Promise<Key> {
  privateJwk ??= await crypto.subtle.exportKey(
    'jwk',
    ((await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair).privateKey,
  );
  const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: privateJwk.x! };
  return {
    privateJwk,
    publicJwk,
    keyid: await jwkToKeyID(publicJwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE),
  };
}

let directory: Server;
const directoryHits: string[] = [];
let server: TestServer;
let agent: string;
let key: Key;
let jwksKey: Key;
let testKey: Key;

beforeAll(async () => {
  [key, jwksKey, testKey] = await Promise.all([keyOf(), keyOf(), keyOf(RFC9421_KEY)]);
  directory = createServer((req, res) => {
    directoryHits.push(req.url!);
    if (req.url === WELL_KNOWN) {
      res.writeHead(200, {
        'Content-Type': 'application/http-message-signatures-directory+json',
        'Cache-Control': 'max-age=3600',
      });
      return void res.end(JSON.stringify({ keys: [{ ...key.publicJwk, kid: key.keyid }, testKey.publicJwk] }));
    }
    if (req.url === '/keys.json')
      return void res
        .writeHead(200, { 'Content-Type': 'application/jwk-set+json' })
        .end(JSON.stringify({ keys: [jwksKey.publicJwk] }));
    res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => directory.listen(0, '127.0.0.1', resolve));
  agent = `http://127.0.0.1:${(directory.address() as AddressInfo).port}`;

  // The shipped content, with ChatGPT-User's signature agent moved to the local directory.
  const content = mkdtempSync(join(tmpdir(), 'agentnode-content-'));
  cpSync('content', content, { recursive: true });
  const families = join(content, 'bot-families.yaml');
  writeFileSync(
    families,
    readFileSync(families, 'utf8').replace(
      "signature_agents: ['https://chatgpt.com']",
      `signature_agents: ['${agent}']`,
    ),
  );
  // Directories on loopback are reachable only because this test says so.
  server = await startServer({ CONTENT_DIR: content, WEB_BOT_AUTH_ALLOW_LOOPBACK: 'true' });
});
afterAll(async () => {
  await server.stop();
  directory.close();
});

async function send(url: string, headers: Record<string, string>): Promise<number> {
  const res = await fetch(url, { headers: { 'User-Agent': CHROME, ...headers } });
  await res.arrayBuffer();
  return res.status;
}

/** A GET signed as the working-group draft says: Signature-Agent a dictionary, its member covered by key. */
async function signedGet(path: string, signer: Key, signatureAgent = `sig1="${agent}"`): Promise<number> {
  const url = server.url + path;
  const created = Math.floor(Date.now() / 1000);
  const privateKey = await crypto.subtle.importKey('jwk', signer.privateJwk, { name: 'Ed25519' }, false, ['sign']);
  const sig = await createSignature(
    { kind: 'request', method: 'GET', targetUri: url, fields: [{ name: 'signature-agent', value: signatureAgent }] },
    {
      label: 'sig1',
      components: ['@authority', component('signature-agent', { key: 'sig1' })],
      parameters: { created, expires: created + 60, keyid: signer.keyid, tag: 'web-bot-auth' },
      signer: webcrypto.signer(privateKey),
    },
  );
  return send(url, {
    'Signature-Agent': signatureAgent,
    Signature: sig.signature,
    'Signature-Input': sig.signatureInput,
  });
}

/** A GET signed the earlier drafts' way, by the `web-bot-auth` package: Signature-Agent a bare string. */
async function legacySignedGet(path: string, signer: Key): Promise<number> {
  const url = server.url + path;
  const now = new Date();
  const signatureAgent = `"${agent}"`;
  const sig = await signatureHeaders(
    { method: 'GET', url, headers: { 'signature-agent': signatureAgent } },
    await signerFromJWK(signer.privateJwk),
    { created: now, expires: new Date(now.getTime() + 60_000) },
  );
  return send(url, {
    'Signature-Agent': signatureAgent,
    Signature: sig.Signature,
    'Signature-Input': sig['Signature-Input'],
  });
}

interface Verification {
  method: string;
  verified: number;
  failed: number;
  unverifiable: number;
}

/** ChatGPT-User's verification once `settled` of its signed requests have their outcome (directories are fetched in the background). */
function verificationAt(settled: number): Promise<Verification> {
  return waitFor(
    async () => {
      const traffic = (await (
        await fetch(`${server.url}/bot-traffic.json`, { headers: { 'User-Agent': CHROME } })
      ).json()) as { families: { family: string; verification: Verification }[] };
      return traffic.families.find((f) => f.family === 'ChatGPT-User')?.verification;
    },
    {
      until: (v) => v !== undefined && v.verified + v.failed + v.unverifiable >= settled,
      what: `ChatGPT-User with ${settled} settled verifications`,
    },
  ) as Promise<Verification>;
}

async function species(name: string): Promise<any> {
  const wall = (await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'User-Agent': CHROME } })).json()) as {
    species: any[];
  };
  return wall.species.find((s) => s.species === name);
}

describe('Web Bot Auth over HTTP', () => {
  it('counts signed requests with a browser User-Agent under the agent family, verified, from one directory fetch', async () => {
    expect(await signedGet('/api/convert', key)).toBe(200);
    expect(await signedGet('/api/citizens', key)).toBe(200);
    expect(await legacySignedGet('/llms.txt', key)).toBe(200);
    expect(await verificationAt(3)).toEqual({ method: 'web-bot-auth', verified: 3, failed: 0, unverifiable: 0 });
    const row = await species('ChatGPT-User');
    expect(row.hits).toBe(3);
    expect(row.intelligence_class).toBe('Intelligence');
    expect(directoryHits).toEqual([WELL_KNOWN]);
  });

  it('reads keys from a JWK Set the member names (type=jwks_uri)', async () => {
    expect(await signedGet('/api/convert', jwksKey, `sig1="${agent}/keys.json";type=jwks_uri`)).toBe(200);
    expect(await verificationAt(4)).toMatchObject({ verified: 4, failed: 0 });
    expect(directoryHits).toEqual([WELL_KNOWN, '/keys.json']);
  });

  it('counts a directory that cannot be had as unverifiable, neither verified nor failed', async () => {
    expect(await signedGet('/api/convert', jwksKey, `sig1="${agent}/down.json";type=jwks_uri`)).toBe(200);
    expect(await verificationAt(5)).toEqual({ method: 'web-bot-auth', verified: 4, failed: 0, unverifiable: 1 });
  });

  it('never verifies the published test key, even from the agent directory, nor a key the agent does not publish: the species turns Cosplay', async () => {
    expect(await signedGet('/api/convert', testKey)).toBe(200);
    const stranger = await keyOf();
    for (let i = 0; i < 4; i++) expect(await signedGet('/llms.txt', stranger)).toBe(200);
    expect(await verificationAt(10)).toEqual({ method: 'web-bot-auth', verified: 4, failed: 5, unverifiable: 1 });
    expect((await species('ChatGPT-User')).intelligence_class).toBe('Cosplay');
    // The keyid of a stranger asks the directory again, at most once a minute: here not yet.
    expect(directoryHits.filter((h) => h === WELL_KNOWN)).toHaveLength(1);
  });

  it('never fetches an agent that is not registered', async () => {
    const before = directoryHits.length;
    expect(await signedGet('/api/convert', key, 'sig1="http://127.0.0.1:9/"')).toBe(200);
    expect(directoryHits.length).toBe(before);
    const traffic = (await (
      await fetch(`${server.url}/bot-traffic.json`, { headers: { 'User-Agent': CHROME } })
    ).json()) as { families: { family: string; requests: number }[] };
    expect(traffic.families.find((f) => f.family === 'ChatGPT-User')?.requests).toBe(10);
  });
});
