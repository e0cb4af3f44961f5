import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recentIso, recentLog } from '../helpers/log-dates.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const TOKEN = 'test-ingest-token-0123456789abcdefghij';
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
// Moved to recent days: the ledger counts only what its range holds at the server's clock.
const fixture = (name: string) =>
  recentLog(readFileSync(join(import.meta.dirname, '..', 'telemetry', 'log-formats', 'fixtures', name), 'utf8'));

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ INGEST_TOKEN: TOKEN });
});
afterAll(async () => {
  await server.stop();
});

const post = (body: string, type: string, { token = TOKEN as string | null, query = '', key = '' } = {}) =>
  fetch(`${server.url}/api/telemetry/ingest${query}`, {
    method: 'POST',
    headers: {
      'Content-Type': type,
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(key ? { 'Idempotency-Key': key } : {}),
    },
    body,
  });
const ingest = (body: unknown, token: string | null = TOKEN) =>
  post(JSON.stringify(body), 'application/json', { token });

interface FamilyRow {
  family: string;
  requests: number;
  topPaths: { path: string; requests: number }[];
  statusCounts: Record<string, number>;
  firstSeen: string;
  verification: { method: string; verified: number; failed: number; unverifiable: number } | string;
}
const families = async (): Promise<Record<string, FamilyRow>> => {
  const traffic = await (await fetch(`${server.url}/bot-traffic.json`, { headers: { 'User-Agent': BROWSER } })).json();
  return Object.fromEntries(traffic.families.map((f: FamilyRow) => [f.family, f]));
};

describe('log ingest in the formats operators have', () => {
  it('counts our JSON line shape, as before', async () => {
    const gpt = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)';
    const lines = [
      {
        method: 'GET',
        path: '/api/convert',
        host: 'cdn.example.org',
        userAgent: gpt,
        status: 200,
        time: recentIso('2026-11-21T10:00:00.000Z'),
      },
      { method: 'GET', path: '/llms.txt', host: 'cdn.example.org', userAgent: gpt, status: 304 },
      { method: 'GET', path: '/', host: 'cdn.example.org', userAgent: BROWSER, status: 200 },
    ];
    const res = await ingest({ lines });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: 3, counted: 2, outOfRange: 0, skipped: {} });
    expect((await families()).GPTBot).toMatchObject({
      requests: 2,
      statusCounts: { '2xx': 1, '3xx': 1 },
      firstSeen: recentIso('2026-11-21T10:00:00.000Z'),
    });
  });

  it('reads every format from real-shaped samples, counts families, paths and statuses, and verifies client addresses', async () => {
    const before = await families();
    const answers = await Promise.all([
      post(fixture('nginx-combined.log'), 'text/plain'),
      post(fixture('cloudflare-http-requests.ndjson'), 'application/x-ndjson', { query: '?format=cloudflare' }),
      post(fixture('cloudfront-standard.log'), 'text/plain; charset=utf-8'),
      post(fixture('vercel-drain.json'), 'application/json'),
      post(fixture('netlify-drain.ndjson'), 'application/x-ndjson'),
      post(
        JSON.stringify({ format: 'drain', lines: fixture('fastly-json.ndjson').trim().split('\n') }),
        'application/json',
      ),
    ]);
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202, 202, 202, 202]);
    // The combined log's lines without a User-Agent are unknown clients', counted apart from bots.
    expect(await Promise.all(answers.map((r) => r.json()))).toEqual([
      { accepted: 6, counted: 5, outOfRange: 0, skipped: { 'not-a-request': 1, unparseable: 1 } },
      { accepted: 3, counted: 3, outOfRange: 0, skipped: { 'bad-status': 1, 'bad-time': 1, unparseable: 1 } },
      { accepted: 4, counted: 3, outOfRange: 0, skipped: { 'bad-status': 1 } },
      { accepted: 1, counted: 1, outOfRange: 0, skipped: { 'not-a-request': 1, 'bad-status': 1 } },
      { accepted: 1, counted: 1, outOfRange: 0, skipped: { 'not-a-request': 1 } },
      { accepted: 1, counted: 1, outOfRange: 0, skipped: {} },
    ]);

    // Every Googlebot read comes from its published ranges (content/bot-ip-ranges.yaml), IPv4 and
    // IPv6 alike: verified at once, without reverse DNS.
    const after = await families();
    const google = after.Googlebot!;
    expect(google.requests).toBe(5);
    expect(google.verification).toEqual({ method: 'ip-ranges', verified: 5, failed: 0, unverifiable: 0 });
    expect(google.topPaths).toEqual(
      expect.arrayContaining([
        { path: '/llms.txt', requests: 3 },
        { path: '/sitemap.xml', requests: 1 },
        { path: '/doctrine/node-protocol', requests: 1 },
      ]),
    );
    expect(google.firstSeen).toBe(recentIso('2026-11-21T10:00:00.000Z'));
    expect(after.GPTBot!.requests - before.GPTBot!.requests).toBe(2);
    expect(after.GPTBot!.statusCounts['2xx']! - before.GPTBot!.statusCounts['2xx']!).toBe(1);
    expect(after.GPTBot!.statusCounts['3xx']! - before.GPTBot!.statusCounts['3xx']!).toBe(1);
    for (const family of ['PerplexityBot', 'ClaudeBot', 'OAI-SearchBot', 'Bytespider'])
      expect(after[family]?.requests, family).toBe(1);
    expect(after.ClaudeBot!.topPaths).toEqual([{ path: '/api/convert', requests: 1 }]);
    // No client address is kept anywhere the ledger shows.
    const wall = await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'User-Agent': BROWSER } })).text();
    for (const address of ['66.249.66.1', '2001:4860:4801:10::3', '192.0.2.60']) expect(wall).not.toContain(address);
  });

  it('counts a batch sent again under its batch key once, and replays the first answer', async () => {
    const body = recentLog(
      '192.0.2.99 - - [21/Nov/2026:12:00:00 +0000] "GET /eon/constitution.json HTTP/1.1" 200 100 "-" "Mozilla/5.0 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)"\n',
    );
    const first = await post(body, 'text/plain', { key: '0123456789abcdef0123456789abcd01' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await first.json()).toEqual({ accepted: 1, counted: 1, outOfRange: 0, skipped: {} });
    const again = await post(body, 'text/plain', { key: '0123456789abcdef0123456789abcd01' });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual({ accepted: 1, counted: 1, outOfRange: 0, skipped: {} });
    expect((await families()).Amazonbot!.requests).toBe(1);
  });

  it('refuses a missing or wrong token with 401, a bad batch with 4xx, and skips bad lines without failing', async () => {
    const line = { method: 'GET', path: '/', status: 200 };
    expect((await ingest({ lines: [line] }, null)).status).toBe(401);
    expect((await ingest({ lines: [line] }, `${TOKEN}x`)).status).toBe(401);
    expect((await ingest({ lines: [] })).status).toBe(422);
    expect((await ingest({ format: 'syslog', lines: [line] })).status).toBe(422);
    expect((await post('x\n', 'text/plain', { query: '?format=syslog' })).status).toBe(400);
    expect((await post('{', 'application/json')).status).toBe(400);
    expect((await post('a b c', 'text/csv')).status).toBe(415);
    expect((await post('x\n'.repeat(10_001), 'text/plain')).status).toBe(413);
    const res = await ingest({ lines: [{ ...line, status: 999 }, { ...line, path: 'no-slash' }, 'garbage'] });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({
      accepted: 0,
      counted: 0,
      outOfRange: 0,
      skipped: { 'bad-status': 1, 'bad-path': 1, unparseable: 1 },
    });
  });

  it('is off (404) on a server without INGEST_TOKEN', async () => {
    const plain = await startServer();
    const res = await fetch(`${plain.url}/api/telemetry/ingest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"lines":[]}',
    });
    expect(res.status).toBe(404);
    await plain.stop();
  });
});
