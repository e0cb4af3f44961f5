import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeaders } from 'web-bot-auth';
import { signerFromJWK } from 'web-bot-auth/crypto';
import { request } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLOW_SITE_URL } from '../helpers/env.ts';
import { ownAddress, startServer, startServerProcess, type ServerProcess, type TestServer } from '../helpers/server.ts';
import {
  agentKey,
  CHROME,
  contentSignedFrom,
  directoryAnswer,
  directoryServer,
  signedHeaders as signedHeadersOf,
  WELL_KNOWN,
  type AgentKey,
} from '../helpers/signed-agent.ts';
import { waitFor } from '../helpers/wait.ts';

// The Ed25519 test key of RFC 9421, appendix B.1.4: the agent publishes it too, and it must never verify.
const RFC9421_KEY = {
  kty: 'OKP',
  crv: 'Ed25519',
  d: 'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU',
  x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs',
};

let directory: Server;
const directoryHits: string[] = [];
let server: TestServer;
let agent: string;
let key: AgentKey;
let jwksKey: AgentKey;
let testKey: AgentKey;

beforeAll(async () => {
  [key, jwksKey, testKey] = await Promise.all([agentKey(), agentKey(), agentKey(RFC9421_KEY)]);
  ({ server: directory, agent } = await directoryServer((req, res) => {
    directoryHits.push(req.url!);
    if (req.url === WELL_KNOWN) {
      const { headers, body } = directoryAnswer([{ ...key.publicJwk, kid: key.keyid }, testKey.publicJwk]);
      return void res.writeHead(200, headers).end(body);
    }
    if (req.url === '/keys.json')
      return void res
        .writeHead(200, { 'Content-Type': 'application/jwk-set+json' })
        .end(JSON.stringify({ keys: [jwksKey.publicJwk] }));
    res.writeHead(503).end();
  }));

  // The shipped content, with ChatGPT-User's signature agent moved to the local directory: its
  // well-known directory, and a JWK Set it names, the only URLs fetched for it.
  // Directories on loopback are reachable only because this test says so.
  // SITE_URL is the server's own address: the authority a signature must be made for.
  server = await startServer({
    ...(await ownAddress()),
    CONTENT_DIR: contentSignedFrom([agent, `${agent}/keys.json`]),
    WEB_BOT_AUTH_ALLOW_LOOPBACK: 'true',
    METRICS_TOKEN: METRICS_TOKEN,
  });
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

const METRICS_TOKEN = 'metrics-token-for-web-bot-auth-0123456789';

/** The headers of a GET signed as the working-group draft says: Signature-Agent a dictionary, its member covered by key. */
function signedHeaders(
  path: string,
  signer: AgentKey,
  o: { signatureAgent?: string; host?: string; nonce?: string } = {},
): Promise<Record<string, string>> {
  return signedHeadersOf(`http://${o.host ?? new URL(server.url).host}${path}`, signer, {
    signatureAgent: o.signatureAgent ?? `sig1="${agent}"`,
    nonce: o.nonce,
  });
}

/** A GET signed as the working-group draft says. */
async function signedGet(path: string, signer: AgentKey, signatureAgent = `sig1="${agent}"`): Promise<number> {
  return send(server.url + path, await signedHeaders(path, signer, { signatureAgent }));
}

/** A GET to our server sent with another Host header (fetch cannot set one). */
const sendWithHost = (path: string, host: string, headers: Record<string, string>) =>
  sendTo(server.url, path, host, headers);

/** A GET signed the earlier drafts' way, by the `web-bot-auth` package: Signature-Agent a bare string. */
async function legacySignedGet(path: string, signer: AgentKey): Promise<number> {
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

  it('counts a directory no family registers as unverifiable, without fetching it, neither verified nor failed', async () => {
    expect(await signedGet('/api/convert', jwksKey, `sig1="${agent}/down.json";type=jwks_uri`)).toBe(200);
    expect(await verificationAt(5)).toEqual({ method: 'web-bot-auth', verified: 4, failed: 0, unverifiable: 1 });
    expect(directoryHits).not.toContain('/down.json');
  });

  it('never verifies the published test key, even from the agent directory, nor a key the agent does not publish: spoofed requests beside the verified ones', async () => {
    expect(await signedGet('/api/convert', testKey)).toBe(200);
    const stranger = await agentKey();
    for (let i = 0; i < 4; i++) expect(await signedGet('/llms.txt', stranger)).toBe(200);
    expect(await verificationAt(10)).toEqual({ method: 'web-bot-auth', verified: 4, failed: 5, unverifiable: 1 });
    // The genuine family keeps its class; the five are spoofed requests of its name (Cosplay, request by request).
    expect((await species('ChatGPT-User')).intelligence_class).toBe('Intelligence');
    expect((await classCounts()).Cosplay).toBe(5);
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

  it('never verifies a signature made for another host and sent here with that Host', async () => {
    const headers = await signedHeaders('/api/convert', key, { host: 'shop.example', nonce: 'shop-1' });
    for (let i = 0; i < 3; i++) expect(await sendWithHost('/api/convert', 'shop.example', headers)).toBe(200);
    expect(await verificationAt(13)).toEqual({ method: 'web-bot-auth', verified: 4, failed: 8, unverifiable: 1 });
  });

  it('verifies one captured set of signed headers once: the 19 replays of its nonce are counted as replays', async () => {
    const headers = await signedHeaders('/api/convert', key, { nonce: 'captured-1' });
    for (let i = 0; i < 20; i++) expect(await send(`${server.url}/api/convert`, headers)).toBe(200);
    expect(await verificationAt(33)).toEqual({ method: 'web-bot-auth', verified: 5, failed: 27, unverifiable: 1 });
    expect(await metric('agentnode_web_bot_auth_replays_total')).toBe(19);
    expect(await metric('agentnode_web_bot_auth_directory_fetches_total')).toBe(
      directoryHits.filter((h) => h === WELL_KNOWN || h === '/keys.json').length,
    );
  });

  it('keeps the genuine family its class after 20 garbage signatures under its agent, then shows 5 genuine ones verified beside them', async () => {
    const garbage = await agentKey();
    for (let i = 0; i < 20; i++) expect(await signedGet('/llms.txt', garbage)).toBe(200);
    for (let i = 0; i < 5; i++)
      expect(await send(`${server.url}/llms.txt`, await signedHeaders('/llms.txt', key, { nonce: `g-${i}` }))).toBe(
        200,
      );
    expect(await verificationAt(58)).toEqual({ method: 'web-bot-auth', verified: 10, failed: 47, unverifiable: 1 });
    expect((await species('ChatGPT-User')).intelligence_class).toBe('Intelligence');
    const counts = await classCounts();
    expect(counts.Cosplay).toBe(47);
    expect(counts.Intelligence).toBeGreaterThanOrEqual(11);
  });
});

describe('Web Bot Auth nonces across a restart of the embedded store', () => {
  it('never verifies a captured signature again after a restart, or a kill, of a process that started on a fresh folder', async () => {
    const env = {
      CONTENT_DIR: contentSignedFrom([agent]),
      WEB_BOT_AUTH_ALLOW_LOOPBACK: 'true',
    };
    // Each process serves the test build's SITE_URL: the authority the signature is made for, sent as Host.
    const site = new URL(FLOW_SITE_URL);
    const verification = (p: ServerProcess, settled: number) =>
      waitFor(
        async () =>
          (
            (await (await fetch(`${p.url}/bot-traffic.json`, { headers: { 'User-Agent': CHROME } })).json()) as {
              families: { family: string; verification: { verified: number; failed: number; unverifiable: number } }[];
            }
          ).families.find((f) => f.family === 'ChatGPT-User')?.verification,
        {
          until: (v) => v !== undefined && v.verified + v.failed + v.unverifiable >= settled,
          what: `${settled} settled ChatGPT-User verifications`,
        },
      );
    for (const stop of ['SIGTERM', 'SIGKILL'] as const) {
      const dataDir = mkdtempSync(join(tmpdir(), 'wba-restart-'));
      // A fresh folder: the first process finds no ledger saved. Killed, it saves none at shutdown, and
      // none on its timer (an hour away): only at its first verified signature.
      const first = await startServerProcess({
        ...env,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'debug',
        TELEMETRY_FLUSH_MS: '3600000',
      });
      const headers = await signedHeadersOf(`${site.origin}/api/convert`, key, {
        signatureAgent: `sig1="${agent}"`,
        nonce: `across-a-restart-${stop}`,
      });
      expect(await sendTo(first.url, '/api/convert', site.host, headers)).toBe(200);
      expect(await verification(first, 1)).toMatchObject({ verified: 1, failed: 0, unverifiable: 0 });
      if (stop === 'SIGTERM') await first.stop();
      else {
        // Its first verified signature saves the ledger at once, not at the next save 5 s on.
        await first.waitForLog((l) => l.includes('telemetry: ledger saved'));
        first.child.kill('SIGKILL');
        await new Promise((resolve) => first.child.once('exit', resolve));
      }
      const second = await startServerProcess({ ...env, DATA_DIR: dataDir });
      try {
        expect(await sendTo(second.url, '/api/convert', site.host, headers)).toBe(200);
        expect([stop, await verification(second, 2)]).toMatchObject([
          stop,
          { verified: 1, failed: 0, unverifiable: 1 },
        ]);
      } finally {
        await second.stop();
      }
    }
  });
});

/** A GET of `path` sent to the server at `base` with the given Host (fetch cannot set one). */
function sendTo(base: string, path: string, host: string, headers: Record<string, string>): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { ...headers, Host: host, 'User-Agent': CHROME } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

async function classCounts(): Promise<Record<string, number>> {
  const wall = (await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'User-Agent': CHROME } })).json()) as {
    meters: { class_counts: Record<string, number> };
  };
  return wall.meters.class_counts;
}

/** A counter's value in /metrics. */
async function metric(name: string): Promise<number> {
  const text = await (
    await fetch(`${server.url}/metrics`, {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}`, 'User-Agent': CHROME },
    })
  ).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}
