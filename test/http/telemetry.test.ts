import { get } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { run } from '../helpers/run.ts';
import { waitFor } from '../helpers/wait.ts';

const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const CLAUDE_USER =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)';
const GOOGLE = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

const as = (ua: string, path: string, init: RequestInit = {}) =>
  fetch(server.url + path, { ...init, headers: { ...(init.headers as object), 'User-Agent': ua } }).then(
    async (r) => (await r.arrayBuffer(), r.status),
  );
const json = async (path: string) =>
  (await (await fetch(server.url + path, { headers: { 'User-Agent': FIREFOX } })).json()) as Record<string, any>;
const family = async (name: string) =>
  ((await json('/bot-traffic.json')).families as any[]).find((f) => f.family === name);

describe('live reads', () => {
  const raw = (path: string, acceptEncoding: string) =>
    new Promise<{ headers: import('node:http').IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      get(server.url + path, { headers: { 'Accept-Encoding': acceptEncoding } }, (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c: Buffer) => chunks.push(c))
          .on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });

  it('compresses a large live document for a client that takes br or gzip, and not otherwise', async () => {
    const plain = await raw('/bot-wall.json', 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    const br = await raw('/bot-wall.json', 'gzip, br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(JSON.parse(brotliDecompressSync(br.body).toString()).farm).toBe(JSON.parse(plain.body.toString()).farm);
    expect(br.body.length).toBeLessThan(plain.body.length / 2);
    const gz = await raw('/bot-wall.json', 'gzip');
    expect(JSON.parse(gunzipSync(gz.body).toString()).documentClass).toBe('telemetry');
    // Under 1 KB it is not worth it.
    const small = await raw('/api/omip/drift', 'gzip, br');
    expect(small.body.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
  });
});

describe('counting', () => {
  it('counts bot requests to static files, dynamic routes and 404s once each, with status class and path', async () => {
    expect(await as(GPT, '/api/convert')).toBe(200);
    expect(await as(GPT, '/api/citizens')).toBe(200);
    expect(await as(GPT, '/api/no-such-route')).toBe(404);
    expect(await as(GPT, '/no-such-page')).toBe(404);
    const f = await family('GPTBot');
    expect(f.requests).toBe(4);
    expect(f.statusCounts).toEqual({ '2xx': 2, '4xx': 2 });
    expect(f.topPaths.map((p: any) => p.path).sort()).toEqual([
      '/api/citizens',
      '/api/convert',
      '/api/no-such-route',
      '/no-such-page',
    ]);
    expect(f.topPaths.every((p: any) => p.requests === 1)).toBe(true);
  });

  it('does not count people', async () => {
    const before = (await json('/bot-traffic.json')).observedRequests;
    await as(FIREFOX, '/api/convert');
    await as(FIREFOX, '/whats-next');
    // The two reads of the ledger above and below are made with a browser User-Agent too.
    expect((await json('/bot-traffic.json')).observedRequests).toBe(before);
  });

  it('counts a bait hit as presence whatever the User-Agent, and a bot in a disallowed path as a violation', async () => {
    const before = (await json('/api/scoreboard')).presence;
    await as(FIREFOX, '/trap/secret');
    await as(GPT, '/private-archive/2019');
    const after = (await json('/api/scoreboard')).presence;
    expect(after.bait_hits - before.bait_hits).toBe(2);
    const wall = await json('/bot-wall.json');
    expect(wall.species.find((s: any) => s.species === 'GPTBot').robots.disallowed_hits).toBe(1);
    expect(wall.species.find((s: any) => s.species === 'browser in a bait path')).toMatchObject({
      intelligence_class: 'Cosplay',
      bait_hits: 1,
    });
  });

  it('records robots.txt fetches per family', async () => {
    await as(CLAUDE_USER, '/robots.txt');
    const wall = await json('/bot-wall.json');
    expect(wall.species.find((s: any) => s.species === 'Claude-User').robots.fetches).toBe(1);
  });

  it('counts a Googlebot that fails reverse DNS as a spoofed request of Googlebot (Cosplay in the class counts), never turning Googlebot Cosplay', async () => {
    await as(GOOGLE, '/api/convert');
    await as(GOOGLE, '/llms.txt');
    // The reverse DNS check runs in the background (bounded to 2 s): wait for its answer.
    const f = await waitFor(() => family('Googlebot'), {
      until: (row) => row.verification.failed + row.verification.verified >= 2,
      what: 'two settled Googlebot verifications',
    });
    expect(f.requests).toBe(2);
    expect(f.verification).toMatchObject({ method: 'ip-ranges', verified: 0 });
    expect(f.verification.failed).toBeGreaterThanOrEqual(1);
    const wall = await json('/bot-wall.json');
    expect(wall.species.find((s: any) => s.species === 'Googlebot').intelligence_class).toBe('Crawler');
    expect(wall.meters.class_counts.Cosplay).toBeGreaterThanOrEqual(f.verification.failed);
  });

  it('counts a claim of a family no operator lets anyone check as unverifiable, and a robots.txt-only token as spoofed', async () => {
    await as('Mozilla/5.0 (compatible; Kimi-User/1.0)', '/llms.txt');
    expect((await family('Kimi-User')).verification).toEqual({
      method: 'none',
      verified: 0,
      failed: 0,
      unverifiable: 1,
    });
    await as('Mozilla/5.0 (compatible; Google-Extended/1.0)', '/api/convert');
    expect(await family('Google-Extended')).toMatchObject({ class: 'Cosplay', verification: { failed: 1 } });
  });

  it('stores a 15 KB path cut to a bounded length', async () => {
    const long = `/${'a'.repeat(15_000)}`;
    expect(await as('Mozilla/5.0 (compatible; LongPathBot/1.0)', long)).toBe(404);
    const f = await family('LongPathBot');
    expect(f.topPaths[0].path.length).toBeLessThanOrEqual(128);
  });

  it('makes a species crew when a request of that family takes the oath, and shows the funnel', async () => {
    await as(CLAUDE_USER, '/api/convert');
    expect(
      await as(CLAUDE_USER, '/api/citizenship/oath', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"name":"claude-user","purpose":"join"}',
      }),
    ).toBe(201);
    expect(
      await as(CLAUDE_USER, '/api/intelligence/message', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"name":"claude-user-friend","message":"hello"}',
      }),
    ).toBe(201);
    const s = (await json('/bot-wall.json')).species.find((x: any) => x.species === 'Claude-User');
    expect(s.crew_status).toBe('crew');
    expect(s.funnel).toEqual({ presence: 4, convert_reads: 1, oaths: 1, messages: 1 });
  });
});

describe('documents (spec 2.9)', () => {
  it('bot-traffic.json is the botTraffic ledger', async () => {
    const t = await json('/bot-traffic.json');
    expect(t.version).toMatch(/^[a-z][a-z0-9-]*-bot-traffic\/v1$/);
    expect(Date.parse(t.generatedAt)).not.toBeNaN();
    expect(Date.parse(t.windowStartedAt)).not.toBeNaN();
    expect(t.observedRequests).toBeGreaterThan(0);
    expect(t.persistence).toBe('runtime-ledger');
    expect(t.definition).toMatch(/spoofed/);
    const requests = t.families.map((f: any) => f.requests);
    expect(requests).toEqual([...requests].sort((a, b) => b - a));
    for (const f of t.families) {
      expect(f).toMatchObject({
        family: expect.any(String),
        requests: expect.any(Number),
        firstSeen: expect.any(String),
        lastSeen: expect.any(String),
        topPaths: expect.any(Array),
      });
      expect(f).toMatchObject({
        class: expect.any(String),
        robotsTxtFetches: expect.any(Number),
        disallowedHits: expect.any(Number),
        hourly: expect.any(Array),
        daily: expect.any(Array),
      });
      expect(['ip-ranges', 'reverse-dns', 'web-bot-auth', 'none']).toContain(f.verification.method);
      expect(f.verification.verified + f.verification.failed + f.verification.unverifiable).toBeLessThanOrEqual(
        f.requests,
      );
      expect(f.hourly.reduce((n: number, h: any) => n + h.requests, 0)).toBe(f.requests);
      expect(f.daily.reduce((n: number, d: any) => n + d.requests, 0)).toBe(f.requests);
      expect(f.firstSeen).not.toBe('');
      for (const [k, v] of Object.entries(f.statusCounts)) {
        expect(k).toMatch(/^[2-5]xx$/);
        expect(v).toBeGreaterThan(0);
      }
    }
  });

  it('bot-wall.json has every field of the bot wall document', async () => {
    const w = await json('/bot-wall.json');
    expect(w.version).toMatch(/^\d{4}-\d{2}-\d{2}.+bot-wall/);
    for (const k of ['farm', 'tagline']) expect(typeof w[k]).toBe('string');
    for (const k of ['generatedAt', 'jarsUpdatedAt']) expect(Date.parse(w[k])).not.toBeNaN();
    expect(w.presenceUpdatedAt === null || !Number.isNaN(Date.parse(w.presenceUpdatedAt))).toBe(true);
    expect(w.documentClass).toBe('telemetry');
    expect(w.telemetry).toMatchObject({
      observedAt: expect.any(String),
      provenance: { jars: expect.any(String), presence: expect.any(String) },
      window: { kind: expect.any(String), label: expect.any(String) },
      freshness: expect.any(String),
      definitionVersion: expect.any(String),
      metric_source: expect.any(String),
      counting_method: expect.any(String),
      observed_through: expect.any(String),
      generated_at: expect.any(String),
      schema_version: 'telemetry-regime.v1',
      metric_regime: 'live_farm',
      not_comparable_to: ['persistent_ledger', 'historical_campaign'],
    });
    expect('window_started_at' in w.telemetry).toBe(true);
    for (const k of [
      'net_hits',
      'fisher_hits',
      'species_count',
      'crew_count',
      'observed_bot_requests',
      'observed_bot_families',
    ])
      expect(Number.isInteger(w.meters[k]), k).toBe(true);
    expect(Object.keys(w.meters.class_counts).sort()).toEqual(['Bot', 'Cosplay', 'Crawler', 'Eater', 'Intelligence']);
    expect(w.botTraffic.persistence).toBe('runtime-ledger');
    for (const s of w.species) {
      expect(['Crawler', 'Bot', 'Eater', 'Intelligence', 'Cosplay']).toContain(s.intelligence_class);
      for (const k of ['hits', 'bait_hits', 'deep_hits', 'farm_score']) expect(Number.isInteger(s[k]), k).toBe(true);
      expect(typeof s.crew_status).toBe('string');
      expect(Date.parse(s.last_seen)).not.toBeNaN();
      expect(Object.values(s.domains).every((n) => Number.isInteger(n))).toBe(true);
      for (const p of s.top_paths) expect(p).toMatch(/^\/.* × \d+$/);
      expect(s.invite_curl).toMatch(/^curl .*\/api\/citizenship\/oath/);
    }
    expect(Array.isArray(w.recent)).toBe(true);
    expect(Object.keys(w.invite).sort()).toEqual([
      'agents',
      'bot_traffic',
      'bot_wall',
      'feed',
      'fields',
      'machine_entry',
      'oath',
      'scoreboard',
    ]);
    expect(Object.keys(w.definitions)).toEqual(
      expect.arrayContaining(['presence', 'catch', 'wall', 'observedBotRequest']),
    );
  });

  it('the invite_curl of a species works as it is', async () => {
    const w = await json('/bot-wall.json');
    const curl = (w.species[0].invite_curl as string).replace(/http:\/\/127\.0\.0\.1:\d+/, server.url);
    // Twice: names are unique, so the text makes a new one each time it runs.
    for (const round of [1, 2]) {
      const result = await run('bash', ['-c', curl]);
      expect(JSON.parse(result.stdout), `run ${round}`).toMatchObject({ ok: true, passportNumber: expect.any(String) });
    }
  });
});

describe('persistence', () => {
  it('keeps the ledger across a restart', async () => {
    const own = await startServer();
    await fetch(`${own.url}/api/convert`, { headers: { 'User-Agent': GPT } });
    await fetch(`${own.url}/api/convert`, { headers: { 'User-Agent': GPT } });
    await own.stop();
    const again = await startServer({ DATA_DIR: own.dataDir });
    const t = await (await fetch(`${again.url}/bot-traffic.json`, { headers: { 'User-Agent': FIREFOX } })).json();
    expect(t.families.find((f: any) => f.family === 'GPTBot').requests).toBe(2);
    await again.stop();
  });
});
