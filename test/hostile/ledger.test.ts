import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LEDGER_LIMITS,
  LEDGER_SKEW_MS,
  OTHER_FAMILIES,
  type TelemetrySnapshot,
} from '../../api/telemetry/ledger/ledger.ts';
import { RANGES, toWallView, type RangeKey } from '../../src/lib/bot-wall-view.ts';
import { crawlerAgents } from '../helpers/crawler-agents.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { snapshotOnDisk } from '../helpers/snapshot.ts';
import { pool } from './probe.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/wait.ts';

// Many requests with 15 KB paths from crawlers of more families than the ledger
// keeps. The ledger is bounded in bytes (LEDGER_LIMITS): families past 128 fold into one
// "(other families)" row, paths are cut to 128 characters and 16 a family. README "Limits" states
// the worst case: about 0.55 MB saved and 0.6 MB for /bot-wall.json. Before, 10,000 such requests
// made /bot-wall.json 22 MB and the saved ledger 150 MB.
const MB = 1024 * 1024;
const WALL_MAX = 0.6 * MB;
const SAVED_MAX = 0.6 * MB;
const userAgents = crawlerAgents(200);
const REQUESTS = 3000;
/** A distinct path of ~15 KB (request headers may take 16 KiB in all). */
const longPath = () => `/deep/${randomBytes(7400).toString('hex')}`;

let server: TestServer;
let dataDir: string;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
  dataDir = server.dataDir;
});
afterAll(async () => {
  await server.stop();
});

/** The ledger most recently saved in the data folder: the last telemetry.save in the journal, else the snapshot's. */
function savedLedger(): { ledger: TelemetrySnapshot; bytes: number } {
  let found: { ledger: TelemetrySnapshot; bytes: number } | undefined;
  for (const file of readdirSync(dataDir)
    .filter((f) => f.startsWith('journal-'))
    .sort()) {
    for (const line of readFileSync(join(dataDir, file), 'utf8').split('\n')) {
      if (!line.includes('"op":"telemetry.save"')) continue;
      // An entry behind its checksum (`<crc32c hex> <json>`), or of the format before checksums.
      const entry = JSON.parse(line.replace(/\0+$/, '').replace(/^[0-9a-f]{8} /, '')) as { v: TelemetrySnapshot };
      found = { ledger: entry.v, bytes: Buffer.byteLength(JSON.stringify(entry.v)) };
    }
  }
  if (!found) {
    const telemetry = snapshotOnDisk(dataDir)!.header.telemetry as TelemetrySnapshot;
    found = { ledger: telemetry, bytes: Buffer.byteLength(JSON.stringify(telemetry)) };
  }
  return found;
}

/** The bounds every view of the ledger keeps. */
function expectBounded(families: { family: string; paths: string[] }[]): void {
  // The twenty real crawlers of the flood keep their rows; the invented names share the pool's.
  const real = crawlerAgents(0).length;
  expect(families.length).toBeLessThanOrEqual(real + LEDGER_LIMITS.poolRows + 2);
  expect(families.map((f) => f.family)).toContain(OTHER_FAMILIES);
  for (const f of families) {
    expect(f.family.length).toBeLessThanOrEqual(LEDGER_LIMITS.nameChars);
    expect(f.paths.length).toBeLessThanOrEqual(LEDGER_LIMITS.pathsPerFamily);
    for (const p of f.paths) expect(p.length).toBeLessThanOrEqual(LEDGER_LIMITS.pathChars);
  }
}

describe('long paths from crawlers of many families', () => {
  it(`${REQUESTS} requests with 15 KB paths from ${userAgents.length} families keep /bot-wall.json, /bot-traffic.json and the saved ledger under the documented worst case, across a restart`, async () => {
    await pool(REQUESTS, 8, async (i) => {
      const res = await fetch(`${server.url}${longPath()}`, {
        headers: { 'User-Agent': userAgents[i % userAgents.length]! },
      });
      await res.arrayBuffer();
      expect(res.status).toBeLessThan(500);
    });

    const wall = await (await fetch(`${server.url}/bot-wall.json`)).text();
    const traffic = await (await fetch(`${server.url}/bot-traffic.json`)).text();
    console.log(`/bot-wall.json ${wall.length} bytes, /bot-traffic.json ${traffic.length} bytes`);
    expect(wall.length).toBeLessThan(WALL_MAX);
    expect(traffic.length).toBeLessThan(WALL_MAX);
    const listed = (JSON.parse(traffic) as { families: { family: string; topPaths: { path: string }[] }[] }).families;
    for (const name of ['Googlebot', 'GPTBot', 'ClaudeBot', 'Bytespider'])
      expect(listed.map((f) => f.family)).toContain(name);
    expectBounded(listed.map((f) => ({ family: f.family, paths: f.topPaths.map((p) => p.path) })));

    // A stop saves the ledger (as the 5 s flush does); what is on disk keeps the same bounds.
    await server.stop();
    const { ledger, bytes } = savedLedger();
    console.log(`saved ledger ${bytes} bytes, ${Object.keys(ledger.families).length} families`);
    expect(bytes).toBeLessThan(SAVED_MAX);
    expect(ledger.observedRequests).toBeGreaterThanOrEqual(REQUESTS);
    expectBounded(Object.values(ledger.families).map((f) => ({ family: f.family, paths: Object.keys(f.paths) })));

    // After a restart the ledger is what was saved, and a second wave still folds into it.
    server = await startServer({ WRITE_RATE_LIMIT: '0', DATA_DIR: dataDir });
    await pool(500, 8, async (i) => {
      const res = await fetch(`${server.url}${longPath()}`, {
        headers: { 'User-Agent': `Mozilla/5.0 (compatible; NewBot-${i}/1.0)` },
      });
      await res.arrayBuffer();
    });
    const again = await (await fetch(`${server.url}/bot-traffic.json`)).text();
    expect(again.length).toBeLessThan(WALL_MAX);
    const after = (
      JSON.parse(again) as { families: { family: string; requests: number; topPaths: { path: string }[] }[] }
    ).families;
    expectBounded(after.map((f) => ({ family: f.family, paths: f.topPaths.map((p) => p.path) })));
    expect(after.reduce((n, f) => n + f.requests, 0)).toBeGreaterThanOrEqual(REQUESTS + 500);
  });
});

// The ingest clock: with the ingest token, 58 Googlebot records dated 9999 filled every hourly
// (48) and daily (8) bucket of the ledger, which kept the newest: live Googlebot requests vanished
// from the wall's 1 h, 24 h and 7 d ranges, also after a restart; records of 1970 were taken too.
// Now the ledger keeps the server's clock: a record outside [UTC midnight 7 days before today,
// now + 5 min] changes nothing and is counted as outOfRange; one up to 5 min ahead counts as now.
describe('the ingest clock', () => {
  const TOKEN = 'hostile-ingest-token-0123456789abcdefghij';
  const GOOGLE = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
  const record = (time: string) => ({
    method: 'GET',
    path: '/llms.txt',
    host: 'cdn.example.org',
    userAgent: GOOGLE,
    status: 200,
    time,
  });
  /** 48 hours on two days, then ten more days: every bucket the ledger keeps, all in 9999. */
  const year9999 = [
    ...Array.from({ length: 48 }, (_, h) => new Date(Date.UTC(9999, 11, 30, h)).toISOString()),
    ...Array.from({ length: 10 }, (_, d) => new Date(Date.UTC(9999, 11, 20 + d)).toISOString()),
  ];

  let ingestServer: TestServer;
  afterAll(async () => {
    await ingestServer?.stop();
  });

  const ingest = async (times: string[]) => {
    const res = await fetch(`${ingestServer.url}/api/telemetry/ingest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ lines: times.map(record) }),
    });
    expect(res.status).toBe(202);
    return (await res.json()) as { accepted: number; counted: number; outOfRange: number };
  };
  const liveGooglebot = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${ingestServer.url}/llms.txt`, { headers: { 'User-Agent': GOOGLE } });
      await res.arrayBuffer();
      expect(res.status).toBe(200);
    }
  };
  /** Googlebot's requests in each range of the wall, as the page computes them from /bot-wall.json; and no bucket ahead of the clock. */
  const onTheWall = async (): Promise<Record<RangeKey, number>> => {
    const doc = await (await fetch(`${ingestServer.url}/bot-wall.json`)).json();
    const now = new Date();
    for (const f of doc.botTraffic.families as { hourly: { hour: string }[]; daily: { day: string }[] }[]) {
      for (const h of f.hourly) expect(Date.parse(h.hour)).toBeLessThanOrEqual(now.getTime());
      for (const d of f.daily) expect(d.day <= now.toISOString().slice(0, 10)).toBe(true);
    }
    const ranges = Object.keys(RANGES) as RangeKey[];
    return Object.fromEntries(
      ranges.map((r) => [r, toWallView(doc, r, now).families.find((f) => f.family === 'Googlebot')?.requests ?? 0]),
    ) as Record<RangeKey, number>;
  };

  it('58 Googlebot records of 9999, records of 1970 and just past now + 5 min change nothing; live Googlebot requests stay on the wall in every range, across a restart', async () => {
    ingestServer = await startServer({ INGEST_TOKEN: TOKEN, WRITE_RATE_LIMIT: '0' });
    const dir = ingestServer.dataDir;
    await liveGooglebot(3);
    expect(await onTheWall()).toEqual({ '1h': 3, '24h': 3, '7d': 3 });

    const far = await ingest(year9999);
    // Before, this emptied every range: the 9999 buckets outranked the live ones.
    expect(await onTheWall()).toEqual({ '1h': 3, '24h': 3, '7d': 3 });
    expect(far).toEqual({ accepted: 58, counted: 0, outOfRange: 58, skipped: {} });
    expect(await ingest(['1970-01-01T00:00:00.000Z', '1970-01-01T00:00:01.000Z'])).toEqual({
      accepted: 2,
      counted: 0,
      outOfRange: 2,
      skipped: {},
    });
    // Past now + 5 min by a minute: refused; inside by a minute: counted, as now.
    expect(await ingest([new Date(Date.now() + LEDGER_SKEW_MS + 60_000).toISOString()])).toMatchObject({
      counted: 0,
      outOfRange: 1,
    });
    expect(await ingest([new Date(Date.now() + LEDGER_SKEW_MS - 60_000).toISOString()])).toMatchObject({
      counted: 1,
      outOfRange: 0,
    });
    await liveGooglebot(2);
    expect(await onTheWall()).toEqual({ '1h': 6, '24h': 6, '7d': 6 });

    await ingestServer.stop();
    ingestServer = await startServer({ INGEST_TOKEN: TOKEN, WRITE_RATE_LIMIT: '0', DATA_DIR: dir });
    expect(await onTheWall()).toEqual({ '1h': 6, '24h': 6, '7d': 6 });
    await liveGooglebot(1);
    expect(await onTheWall()).toEqual({ '1h': 7, '24h': 7, '7d': 7 });
  });

  it('npm run ingest-logs sums and prints the records out of range', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ingest-clock-')), 'access.ndjson');
    const times = [
      '9999-12-31T23:00:00.000Z',
      '1970-01-01T00:00:00.000Z',
      new Date(Date.now() + LEDGER_SKEW_MS + 60_000).toISOString(),
      new Date(Date.now() - 60_000).toISOString(),
    ];
    writeFileSync(file, `${times.map((t) => JSON.stringify(record(t))).join('\n')}\n`);
    const run = (args: string[]) =>
      new Promise<string>((resolve) => {
        const child = spawn(
          'node_modules/.bin/node',
          ['api/cli/ingest-logs.ts', '--url', ingestServer.url, ...args, file],
          { env: { ...process.env, INGEST_TOKEN: TOKEN } },
        );
        let out = '';
        child.stdout.on('data', (c) => (out += c));
        child.once('close', () => resolve(out));
      });
    const text = await run(['--batch-lines', '2']);
    expect(text).toContain('counted 1 (crawler and bait reads) of 4 requests accepted');
    expect(text).toMatch(/^out of range 3 /m);
    // The same file again replays its batches; a fresh key (one batch of its own) shows the sum in JSON too.
    expect(JSON.parse(await run(['--json', '--batch-lines', '4']))).toMatchObject({
      accepted: 4,
      counted: 1,
      outOfRange: 3,
    });
  });
});

// 400 requests from one address with invented bot User-Agents (junk1-bot/1.0...), then GPTBot,
// ClaudeBot and PerplexityBot: the bot table's families keep their rows and new-family alerts,
// after a restart too; names it does not know compete in a bounded pool by evidence (distinct
// clients and hours, one client's share capped).
describe('families no client can crowd out', () => {
  const REAL: Record<string, string> = {
    GPTBot: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
    ClaudeBot:
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
    PerplexityBot:
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)',
    Bytespider:
      'Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)',
  };
  const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
  interface Row {
    family: string;
    requests: number;
  }
  const get = async (url: string, userAgent: string, client: string) => {
    const res = await fetch(`${url}/llms.txt`, { headers: { 'User-Agent': userAgent, 'X-Forwarded-For': client } });
    await res.arrayBuffer();
    expect(res.status).toBeLessThan(500);
  };
  /** Invented bots: `n` names, from one address or each from its own. */
  const flood = (url: string, prefix: string, n: number, many: boolean) =>
    pool(n, 8, (i) => get(url, `${prefix}${i}-bot/1.0`, many ? `198.51.${100 + (i >> 8)}.${i & 255}` : '203.0.113.7'));
  const rows = async (url: string): Promise<Row[]> =>
    (
      (await (await fetch(`${url}/bot-traffic.json`, { headers: { 'User-Agent': BROWSER } })).json()) as {
        families: Row[];
      }
    ).families;
  const invented = (list: Row[]) => list.filter((r) => r.family.endsWith('-bot'));
  const alerted = (logs: string[], family: string) =>
    logs.some((l) => l.includes('"kind":"new-family"') && l.includes(`"family":"${family}"`));

  it('hundreds of invented families from one address and from many, then the real crawlers: their rows and new-family alerts, across a restart', async () => {
    const env = { WRITE_RATE_LIMIT: '0', TRUST_PROXY: 'loopback' };
    let s = await startServer(env);
    try {
      await flood(s.url, 'junk', 400, false);
      await flood(s.url, 'many', 400, true);
      for (const name of ['GPTBot', 'ClaudeBot', 'PerplexityBot']) await get(s.url, REAL[name]!, '192.0.2.10');
      const first = await rows(s.url);
      for (const name of ['GPTBot', 'ClaudeBot', 'PerplexityBot'])
        expect(first.find((r) => r.family === name)).toMatchObject({ requests: 1 });
      // One address earns four names a row; many addresses fill the pool, never more.
      expect(invented(first).filter((r) => r.family.startsWith('junk')).length).toBeLessThanOrEqual(
        LEDGER_LIMITS.clientUnitsPerHour,
      );
      expect(invented(first).length).toBeLessThanOrEqual(LEDGER_LIMITS.poolRows);
      expect(first.reduce((n, r) => n + r.requests, 0)).toBe(803);
      for (const name of ['GPTBot', 'ClaudeBot', 'PerplexityBot'])
        await waitFor(() => alerted(s.logs, name), { what: `the new-family alert of ${name}` });

      // After a restart the ledger is what was saved; a second flood, then Bytespider, first seen now.
      await s.stop();
      s = await startServer({ ...env, DATA_DIR: s.dataDir });
      await flood(s.url, 'again', 400, false);
      await flood(s.url, 'more', 400, true);
      await get(s.url, REAL.Bytespider!, '192.0.2.11');
      const after = await rows(s.url);
      for (const name of ['GPTBot', 'ClaudeBot', 'PerplexityBot', 'Bytespider'])
        expect(after.find((r) => r.family === name)).toMatchObject({ requests: 1 });
      expect(invented(after).length).toBeLessThanOrEqual(LEDGER_LIMITS.poolRows);
      expect(after.reduce((n, r) => n + r.requests, 0)).toBe(1604);
      await waitFor(() => alerted(s.logs, 'Bytespider'), { what: 'the new-family alert of Bytespider' });
    } finally {
      await s.stop();
    }
  });
});

// A table family's name with its version glued on (`Googlebot2.1`) was read as a new bot of that
// name: it took the family's row with class Bot, no operator and no verification, and kept it when
// the real crawler came. It is a claim of the family, judged by its verification.
describe("a table family's name written otherwise", () => {
  it('Googlebot2.1 from elsewhere, then Googlebot from its published range: one Googlebot row, the claim failed, the crawler verified', async () => {
    const s = await startServer({ TRUST_PROXY: 'loopback' });
    try {
      const get = async (userAgent: string, client: string) => {
        const res = await fetch(`${s.url}/llms.txt`, {
          headers: { 'User-Agent': userAgent, 'X-Forwarded-For': client },
        });
        await res.arrayBuffer();
      };
      await get('Googlebot2.1', '203.0.113.9');
      await get('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', '66.249.66.1');
      const row = async () =>
        (
          (await (await fetch(`${s.url}/bot-traffic.json`)).json()) as {
            families: {
              family: string;
              class: string;
              operator: string | null;
              verification: Record<string, unknown>;
            }[];
          }
        ).families.find((r) => r.family === 'Googlebot');
      await waitFor(async () => (await row())?.verification.failed === 1, { what: "the glued claim's failed check" });
      expect(await row()).toMatchObject({
        class: 'Crawler',
        operator: 'Google',
        verification: { method: 'ip-ranges', verified: 1, failed: 1 },
      });
    } finally {
      await s.stop();
    }
  });
});

// A list's family takes the words a client writes after its token as its name (`collectd Stuff`),
// and its spelling (`COLLECTD`): each made a row of the table's, never given up, so one client could
// add rows without end.
describe("a table family's spellings and words", () => {
  it('one row for Collectd however 80 requests from one address spell it or what they add to it', async () => {
    const s = await startServer({ WRITE_RATE_LIMIT: '0' });
    try {
      await pool(80, 8, async (i) => {
        const ua = i % 2 === 0 ? `collectd Stuff${i}/1.0` : `${i % 4 === 1 ? 'COLLECTD' : 'CollectD'}/5.${i}`;
        const res = await fetch(`${s.url}/llms.txt`, { headers: { 'User-Agent': ua } });
        await res.arrayBuffer();
      });
      const families = (
        (await (await fetch(`${s.url}/bot-traffic.json`)).json()) as {
          families: { family: string; requests: number }[];
        }
      ).families;
      expect(families.filter((r) => /collectd/i.test(r.family))).toEqual([
        expect.objectContaining({ family: 'Collectd', requests: 80 }),
      ]);
    } finally {
      await s.stop();
    }
  });
});

const pgAvailable = await postgresAvailable();
describe.runIf(pgAvailable)(
  'families no client can crowd out, on PostgreSQL: two processes, their ledgers added up',
  () => {
    let a: ServerProcess;
    let b: ServerProcess;
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await dropDatabases();
    });
    const GPT =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
    const CLAUDE =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)';
    const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
    const get = async (url: string, userAgent: string, client: string) => {
      const res = await fetch(`${url}/llms.txt`, { headers: { 'User-Agent': userAgent, 'X-Forwarded-For': client } });
      await res.arrayBuffer();
    };
    const families = async (url: string) =>
      (
        (await (await fetch(`${url}/bot-traffic.json`, { headers: { 'User-Agent': BROWSER } })).json()) as {
          families: { family: string; requests: number }[];
        }
      ).families;

    it('keeps GPTBot and ClaudeBot rows and the pool bound in the merged view after 300 invented families on each, and after both restart', async () => {
      const env = {
        DATABASE_URL: await freshDatabase(),
        WRITE_RATE_LIMIT: '0',
        TELEMETRY_FLUSH_MS: '100',
        TRUST_PROXY: 'loopback',
      };
      [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
      await pool(300, 8, (i) => get(a.url, `pga${i}-bot/1.0`, `198.51.100.${i % 250}`));
      await pool(300, 8, (i) => get(b.url, `pgb${i}-bot/1.0`, `198.51.101.${i % 250}`));
      await get(a.url, GPT, '192.0.2.20');
      await get(b.url, CLAUDE, '192.0.2.21');
      const merged = (list: { family: string; requests: number }[]) =>
        ['GPTBot', 'ClaudeBot'].every((n) => list.some((f) => f.family === n)) &&
        list.reduce((n, f) => n + f.requests, 0) === 602;
      for (const s of [a, b]) {
        const list = await waitFor(() => families(s.url), {
          until: merged,
          what: `${s.url} showing both processes' ledgers`,
        });
        expect(list.filter((f) => f.family.endsWith('-bot')).length).toBeLessThanOrEqual(LEDGER_LIMITS.poolRows);
      }
      await Promise.all([a.stop(), b.stop()]);
      [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
      for (const s of [a, b]) {
        const list = await waitFor(() => families(s.url), { until: merged, what: `${s.url} after the restart` });
        expect(list.find((f) => f.family === 'GPTBot')).toMatchObject({ requests: 1 });
        expect(list.find((f) => f.family === 'ClaudeBot')).toMatchObject({ requests: 1 });
        expect(list.filter((f) => f.family.endsWith('-bot')).length).toBeLessThanOrEqual(LEDGER_LIMITS.poolRows);
      }
    });
  },
);
