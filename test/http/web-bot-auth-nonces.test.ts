import type { Server } from 'node:http';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOW_SITE_URL } from '../helpers/env.ts';
import { startRelay, type Relay } from '../helpers/pg-cluster.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import {
  agentKey,
  CHROME,
  contentSignedFrom,
  directoryAnswer,
  directoryServer,
  signedHeaders,
  WELL_KNOWN,
  type AgentKey,
} from '../helpers/signed-agent.ts';
import { waitFor } from '../helpers/wait.ts';

// Two gateway processes on one PostgreSQL database, reached through a relay the test controls: a
// captured signed request replayed to both verifies once, and a nonce PostgreSQL does not answer
// for is unverifiable, never verified.
const available = await postgresAvailable();
const METRICS_TOKEN = 'metrics-token-for-shared-nonces-0123456789';
// Both processes serve SITE_URL (the test build's): the authority a signature is made for, sent as Host.
const SITE = new URL(FLOW_SITE_URL);

let a: ServerProcess;
let b: ServerProcess;
let relay: Relay;
let directory: Server;
let agent: string;
let key: AgentKey;

beforeAll(async () => {
  if (!available) return;
  key = await agentKey();
  ({ server: directory, agent } = await directoryServer((req, res) => {
    if (req.url !== WELL_KNOWN) return void res.writeHead(503).end();
    const { headers, body } = directoryAnswer([key.publicJwk]);
    res.writeHead(200, headers).end(body);
  }));
  const database = new URL(await freshDatabase());
  relay = await startRelay(Number(database.port || 5432));
  database.port = String(relay.port);
  const env = {
    DATABASE_URL: database.href,
    CONTENT_DIR: contentSignedFrom([agent]),
    // The key directory is on loopback only because this test says so.
    WEB_BOT_AUTH_ALLOW_LOOPBACK: 'true',
    METRICS_TOKEN,
    // Each saves its ledger every 100 ms: each shows its own counts plus what the other saved.
    TELEMETRY_FLUSH_MS: '100',
    PG_CONNECT_TIMEOUT_MS: '400',
    PG_QUERY_TIMEOUT_MS: '300',
    LOG_LEVEL: 'debug',
  };
  [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
});
afterAll(async () => {
  if (!available) return;
  relay?.set('forward');
  await Promise.all([a?.stop(), b?.stop()]);
  await relay?.close();
  directory?.close();
  await dropDatabases();
});

/** A GET of `path` sent to `to` with our SITE_URL's Host (fetch cannot set one). */
function send(to: ServerProcess, path: string, headers: Record<string, string>): Promise<number> {
  const { hostname, port } = new URL(to.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname, port, path, headers: { ...headers, Host: SITE.host, 'User-Agent': CHROME } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const signed = (path: string, nonce: string) =>
  signedHeaders(`${SITE.origin}${path}`, key, { signatureAgent: `sig1="${agent}"`, nonce });

interface Verification {
  verified: number;
  failed: number;
  unverifiable: number;
}

/** ChatGPT-User's verification as `s` shows it (its own counts plus the other's saved ones), once `settled` have an outcome. */
function verificationAt(s: ServerProcess, settled: number): Promise<Verification> {
  return waitFor(
    async () => {
      const traffic = (await (
        await fetch(`${s.url}/bot-traffic.json`, { headers: { 'User-Agent': CHROME } })
      ).json()) as { families: { family: string; verification: Verification }[] };
      const v = traffic.families.find((f) => f.family === 'ChatGPT-User')?.verification;
      return v && { verified: v.verified, failed: v.failed, unverifiable: v.unverifiable };
    },
    {
      until: (v) => v !== undefined && v.verified + v.failed + v.unverifiable >= settled,
      what: `${s.url} showing ${settled} settled ChatGPT-User verifications`,
    },
  ) as Promise<Verification>;
}

/** A counter's value in a process's /metrics. */
async function metric(s: ServerProcess, name: string): Promise<number> {
  const text = await (
    await fetch(`${s.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}`, 'User-Agent': CHROME } })
  ).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

describe.runIf(available)('Web Bot Auth nonces shared by two processes on PostgreSQL', () => {
  it('verifies one captured set of signed headers once: sent to both, 6 times each, at once, the 11 others are replays', async () => {
    const headers = await signed('/api/convert', 'captured-once');
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(i % 2 ? a : b, '/api/convert', headers)),
    );
    expect(statuses).toEqual(Array(12).fill(200));
    for (const s of [a, b]) expect(await verificationAt(s, 12)).toEqual({ verified: 1, failed: 11, unverifiable: 0 });
    const replays = await Promise.all([a, b].map((s) => metric(s, 'agentnode_web_bot_auth_replays_total')));
    expect(replays[0]! + replays[1]!).toBe(11);
    // Each process saw the headers six times: it claimed the nonce once, and knew its own replays itself.
    expect(Math.min(...replays)).toBeGreaterThanOrEqual(5);
    for (const s of [a, b]) expect(await metric(s, 'agentnode_web_bot_auth_nonce_claim_failures_total')).toBe(0);
  });

  it('counts a signature unverifiable when PostgreSQL does not answer its claim, within the pool bounds, at debug', async () => {
    const headers = await signed('/api/convert', 'during-the-partition');
    const from = a.logs.length;
    relay.set('hold');
    const started = performance.now();
    expect(await send(a, '/api/convert', headers)).toBe(200);
    await waitFor(() => metric(a, 'agentnode_web_bot_auth_nonce_claim_failures_total'), {
      until: (n) => n === 1,
      what: 'a nonce claim failure counted',
    });
    // The pool's bounds: a new connection 400 ms, a statement 300 ms and 500 ms of grace.
    expect(performance.now() - started).toBeLessThan(2500);
    const line = JSON.parse(
      await a.waitForLog((l) => l.includes('web bot auth: nonce not claimed on the shared store'), { from }),
    );
    // At debug, with the driver's reason and no stack.
    expect(line).toMatchObject({ level: 20, reason: expect.any(String) });
    expect(line.err).toBeUndefined();
    relay.set('forward');
    // Once PostgreSQL answers again, both show it with the rest: unverifiable, never verified.
    for (const s of [a, b]) expect(await verificationAt(s, 13)).toEqual({ verified: 1, failed: 11, unverifiable: 1 });
    // Sent again to the process that saw it, now that the store answers: a replay, known without asking.
    expect(await send(a, '/api/convert', headers)).toBe(200);
    expect(await verificationAt(a, 14)).toEqual({ verified: 1, failed: 12, unverifiable: 1 });
  });
});
