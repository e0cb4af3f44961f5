import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../api/config.ts';
import { loadContent } from '../../api/content/load.ts';
import { buildBotWall } from '../../api/documents/bot-wall.ts';
import { buildBotWallCsv, csvField, rangeBeyondRetention } from '../../api/documents/bot-wall-csv.ts';
import type { Classification } from '../../api/telemetry/classification/classify.ts';
import {
  count,
  countReferral,
  DEFAULT_RETENTION,
  emptySnapshot,
  LEDGER_LIMITS,
  RETENTION_BOUNDS,
  setLedgerRetention,
  type TelemetrySnapshot,
} from '../../api/telemetry/ledger/ledger.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const content = await loadContent('content');
const NOW = new Date('2026-11-24T12:30:00Z');
const bot = (family: string, operator: string | null = null): Classification => ({
  bot: true,
  family,
  class: 'Eater',
  known: operator ? ({ family, operator } as Classification['known']) : null,
  verify: 'none',
});
const hit = (s: TelemetrySnapshot, c: Classification, hoursAgo: number, now = NOW) =>
  count(
    s,
    {
      at: new Date(now.getTime() - hoursAgo * 3_600_000),
      method: 'GET',
      path: '/',
      status: 200,
      host: 'h',
      classification: c,
      verification: 'unverifiable',
      bait: false,
      disallowed: false,
    },
    now,
  );

/** RFC 4180 records of a CSV text, read back (quoted fields, doubled quotes, CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') ((field += '"'), i++);
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') (row.push(field), (field = ''));
    else if (c === '\r' && text[i + 1] === '\n') (row.push(field), rows.push(row), (row = []), (field = ''), i++);
    else field += c;
  }
  return rows;
}

describe('CSV fields (RFC 4180, formula-safe)', () => {
  it.each([
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\r\nlines', '"two\r\nlines"'],
    ['=HYPERLINK("http://x")', `"'=HYPERLINK(""http://x"")"`],
    ['+1', "'+1"],
    ['-2', "'-2"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['a=b', 'a=b'],
    ['', ''],
  ])('writes %j as %j', (value, written) => {
    expect(csvField(value)).toBe(written);
  });

  it('writes numbers as they are and null as an empty field', () => {
    expect(csvField(-3)).toBe('-3');
    expect(csvField(7.5)).toBe('7.5');
    expect(csvField(null)).toBe('');
  });
});

describe('GET /bot-wall.csv, built', () => {
  it("lists the families with requests in the range, most first, with the operator's referrals, and reads back cell for cell", () => {
    const s = emptySnapshot(NOW);
    for (let i = 0; i < 6; i++) hit(s, bot('GPTBot', 'OpenAI'), 0);
    for (let i = 0; i < 4; i++) hit(s, bot('ChatGPT-User', 'OpenAI'), 5);
    for (let i = 0; i < 3; i++) hit(s, bot('=cmd|"/C calc"!A0,evil\nrow'), 30);
    hit(s, bot('OldBot'), 24 * 6);
    countReferral(s, 'OpenAI', 'chatgpt.com', NOW, NOW);
    countReferral(s, 'OpenAI', 'chatgpt.com', new Date(NOW.getTime() - 3 * 3_600_000), NOW);

    const hour = parseCsv(buildBotWallCsv(s, '1h', NOW));
    expect(hour[0]).toEqual([
      'family',
      'class',
      'operator',
      'requests',
      'requests_since_window_start',
      'verification_method',
      'verified',
      'failed_verification',
      'unverifiable',
      'robots_txt_fetches',
      'disallowed_hits',
      'operator_referred_visits',
      'operator_crawl_to_referral',
      'usage_preference_broken',
      'markdown_answers',
      'html_answers',
      'json_answers',
      'markdown_tokens',
    ]);
    expect(hour.slice(1).map((r) => [r[0], r[3], r[11], r[12]])).toEqual([['GPTBot', '6', '1', '6']]);

    const day = parseCsv(buildBotWallCsv(s, '24h', NOW));
    // OpenAI's crawlers made 10 requests in the range and its products sent 2 people: 5 crawls a visit.
    expect(day.slice(1).map((r) => [r[0], r[2], r[3], r[11], r[12]])).toEqual([
      ['GPTBot', 'OpenAI', '6', '2', '5'],
      ['ChatGPT-User', 'OpenAI', '4', '2', '5'],
    ]);
    const week = parseCsv(buildBotWallCsv(s, '7d', NOW));
    expect(week.slice(1).map((r) => r[0])).toEqual([
      'GPTBot',
      'ChatGPT-User',
      `'=cmd|"/C calc"!A0,evil\nrow`,
      'OldBot',
    ]);
    // A family without an operator has empty referral cells, not zeros.
    expect(week[3]!.slice(11, 13)).toEqual(['', '']);
    expect(parseCsv(buildBotWallCsv(s, 'all', NOW)).length).toBe(5);
  });
});

describe('retention set by the operator (LEDGER_HOURS, LEDGER_DAYS)', () => {
  afterAll(() => setLedgerRetention(DEFAULT_RETENTION));

  it('takes values within the bounds and refuses the rest at start-up', () => {
    expect(loadConfig({}).LEDGER_HOURS).toBe(48);
    expect(loadConfig({}).LEDGER_DAYS).toBe(8);
    expect(loadConfig({ LEDGER_HOURS: '336', LEDGER_DAYS: '400' })).toMatchObject({
      LEDGER_HOURS: 336,
      LEDGER_DAYS: 400,
    });
    for (const env of [
      { LEDGER_HOURS: '23' },
      { LEDGER_HOURS: '337' },
      { LEDGER_DAYS: '6' },
      { LEDGER_DAYS: '401' },
      { LEDGER_HOURS: '1.5' },
      { LEDGER_DAYS: 'many' },
    ]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(/LEDGER_(HOURS|DAYS)/);
    }
    expect(() => setLedgerRetention({ hours: 10_000, days: 8 })).toThrow(RangeError);
  });

  it('keeps exactly the buckets asked for, whatever is counted', () => {
    setLedgerRetention({ hours: 24, days: 30 });
    const s = emptySnapshot(NOW);
    for (let h = 0; h < 24 * 40; h++) hit(s, bot('GPTBot'), h);
    for (let h = 0; h < 24 * 40; h++)
      countReferral(s, 'OpenAI', 'chatgpt.com', new Date(NOW.getTime() - h * 3_600_000), NOW);
    expect(Object.keys(s.families.GPTBot!.hourly)).toHaveLength(24);
    expect(Object.keys(s.families.GPTBot!.daily)).toHaveLength(30);
    expect(Object.keys(s.referrals!.OpenAI!.hourly)).toHaveLength(24);
    expect(Object.keys(s.referrals!.OpenAI!.daily)).toHaveLength(30);
    expect(rangeBeyondRetention('30d')).toBeNull();
    setLedgerRetention({ hours: 336, days: 7 });
    const t = emptySnapshot(NOW);
    for (let h = 0; h < 24 * 20; h++) hit(t, bot('GPTBot'), h);
    // Hourly buckets reach further back than the daily ones: both are kept.
    expect(Object.keys(t.families.GPTBot!.hourly)).toHaveLength(336);
    expect(Object.keys(t.families.GPTBot!.daily)).toHaveLength(7);
    expect(rangeBeyondRetention('30d')).toMatch(/LEDGER_DAYS/);
  });

  it('stays within the sizes the README states at the largest retention (saved 2.5 MB, /bot-wall.json 6.5 MB)', () => {
    setLedgerRetention({ hours: RETENTION_BOUNDS.hours.max, days: RETENTION_BOUNDS.days.max });
    const s = emptySnapshot(NOW);
    // Every hourly bucket, then one request a day back to the oldest daily bucket: every bucket filled.
    const hours = [
      ...Array.from({ length: RETENTION_BOUNDS.hours.max }, (_, h) => h),
      ...Array.from({ length: RETENTION_BOUNDS.days.max }, (_, d) => 12 + d * 24),
    ];
    for (let f = 0; f < LEDGER_LIMITS.poolRows + 10; f++)
      for (const h of hours) hit(s, bot(`Family-${f}-${'x'.repeat(50)}`), h);
    for (let o = 0; o < 40; o++)
      for (const h of hours)
        countReferral(s, `Operator ${o}`, 'x.example', new Date(NOW.getTime() - h * 3_600_000), NOW);
    const row = Object.values(s.families)[0]!;
    expect(Object.keys(row.hourly)).toHaveLength(RETENTION_BOUNDS.hours.max);
    expect(Object.keys(row.daily)).toHaveLength(RETENTION_BOUNDS.days.max);
    expect(Buffer.byteLength(JSON.stringify(s))).toBeLessThan(2.5 * 1024 * 1024);
    expect(Object.keys(s.referrals!)).toHaveLength(LEDGER_LIMITS.referralOperators);
    expect(
      Buffer.byteLength(
        JSON.stringify(buildBotWall(content, s, { site: 'https://a.example', canon: 'https://b.example' }, NOW)),
      ),
    ).toBeLessThan(6.5 * 1024 * 1024);
  });
});

describe('GET /bot-wall.csv over HTTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ LEDGER_DAYS: '7' });
    for (let i = 0; i < 3; i++)
      await fetch(`${server.url}/llms.txt`, {
        headers: { 'User-Agent': 'Mozilla/5.0 (compatible; ClaudeBot/1.0; +claudebot@anthropic.com)' },
      }).then((r) => r.arrayBuffer());
    await fetch(`${server.url}/`, {
      headers: {
        'User-Agent':
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36',
        Referer: 'https://claude.ai/chat/1',
      },
    }).then((r) => r.arrayBuffer());
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers text/csv with a header row and a row per family in the range (24h by default)', async () => {
    const res = await fetch(`${server.url}/bot-wall.csv`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const rows = parseCsv(await res.text());
    expect(rows[0]![0]).toBe('family');
    const claude = rows.find((r) => r[0] === 'ClaudeBot')!;
    expect(claude.slice(2, 4)).toEqual(['Anthropic', '3']);
    expect(claude.slice(11, 13)).toEqual(['1', '3']);
    expect((await fetch(`${server.url}/bot-wall.csv?range=7d`)).status).toBe(200);
  });

  it('answers 400 problem+json for an unknown range and one the retention does not reach', async () => {
    for (const q of ['range=1y', 'range=', 'range=30d']) {
      const res = await fetch(`${server.url}/bot-wall.csv?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await res.json()) as { code?: string; detail: string };
      expect(JSON.stringify(body)).toContain('INVALID_QUERY');
      if (q === 'range=30d') expect(body.detail).toMatch(/LEDGER_DAYS/);
    }
  });
});
