import { describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { buildReferrals } from '../../api/documents/bot-wall.ts';
import {
  countReferral,
  emptySnapshot,
  keepClock,
  LEDGER_LIMITS,
  mergeSnapshots,
  OTHER_OPERATORS,
} from '../../api/telemetry/ledger/ledger.ts';
import { groupLines } from '../../api/telemetry/log-formats/line-groups.ts';
import { readerOf } from '../../api/telemetry/log-formats/parse.ts';

const parseLine = (format: 'combined' | 'json', record: string | Record<string, unknown>) => readerOf(format)(record);
import { referralOf } from '../../api/telemetry/observed.ts';
import { referralRule, utmSourceOf } from '../../api/telemetry/referrals/referrals.ts';
import { telemetryRulesOf } from '../../api/telemetry/telemetry.ts';
import { memoryTelemetry, request } from '../helpers/telemetry.ts';
import { AiReferrersSchema } from '../../api/schemas/ai-referrers.ts';

const content = await loadContent('content');
const rule = referralRule(content.aiReferrers);
const PERSON = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36';
const GPTBOT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';

const telemetry = () => memoryTelemetry();

describe('the referral table (content/ai-referrers.yaml)', () => {
  it.each([
    ['https://chatgpt.com/', 'OpenAI', 'chatgpt.com'],
    ['https://chat.openai.com/c/abc', 'OpenAI', 'chat.openai.com'],
    ['https://www.perplexity.ai/search/x', 'Perplexity', 'perplexity.ai'],
    ['https://labs.perplexity.ai/', 'Perplexity', 'perplexity.ai'],
    ['https://claude.ai/chat/1', 'Anthropic', 'claude.ai'],
    ['https://gemini.google.com/app', 'Google', 'gemini.google.com'],
    ['https://bard.google.com/', 'Google', 'bard.google.com'],
    ['https://copilot.microsoft.com/', 'Microsoft', 'copilot.microsoft.com'],
    ['https://www.bing.com/chat?q=x', 'Microsoft', 'bing.com/chat'],
    ['https://www.bing.com/chat/sub', 'Microsoft', 'bing.com/chat'],
    ['https://you.com/search', 'You', 'you.com'],
    ['https://www.phind.com/', 'Phind', 'phind.com'],
    ['https://poe.com/ChatGPT', 'Quora', 'poe.com'],
    ['https://www.meta.ai/', 'Meta', 'meta.ai'],
    ['https://chat.deepseek.com/', 'DeepSeek', 'chat.deepseek.com'],
    ['HTTPS://ChatGPT.COM/', 'OpenAI', 'chatgpt.com'],
  ])('maps the Referer %s to %s (%s)', (referer, operator, source) => {
    expect(rule(referer, undefined)).toEqual({ operator, source });
  });

  it.each([
    'https://www.google.com/search?q=chatgpt',
    'https://www.bing.com/search?q=x',
    'https://www.bing.com/chatter',
    'https://notchatgpt.com/',
    'https://chatgpt.com.evil.example/',
    'https://example.org/?r=https://chatgpt.com/',
    'android-app://com.openai.chatgpt/',
    'chatgpt.com',
    '',
    `https://chatgpt.com/${'a'.repeat(600)}`,
  ])('maps no operator to %s', (referer) => {
    expect(rule(referer, undefined)).toBeNull();
  });

  it('reads utm_source: listed values, listed hosts, any case; the Referer first', () => {
    expect(rule(undefined, 'chatgpt.com')).toEqual({ operator: 'OpenAI', source: 'utm_source=chatgpt.com' });
    expect(rule(undefined, 'ChatGPT.com')).toEqual({ operator: 'OpenAI', source: 'utm_source=chatgpt.com' });
    expect(rule(undefined, 'perplexity')).toEqual({ operator: 'Perplexity', source: 'utm_source=perplexity' });
    expect(rule(undefined, 'copilot.microsoft.com')).toEqual({
      operator: 'Microsoft',
      source: 'utm_source=copilot.microsoft.com',
    });
    expect(rule(undefined, 'newsletter')).toBeNull();
    expect(rule(undefined, 'google.com')).toBeNull();
    expect(rule('https://claude.ai/', 'chatgpt.com')).toEqual({ operator: 'Anthropic', source: 'claude.ai' });
    expect(rule('https://example.org/', 'chatgpt.com')).toEqual({
      operator: 'OpenAI',
      source: 'utm_source=chatgpt.com',
    });
  });

  it('takes utm_source from a query only when it is there, cut to 64 characters', () => {
    expect(utmSourceOf('a=1&utm_source=chatgpt.com&utm_medium=x')).toBe('chatgpt.com');
    expect(utmSourceOf('?utm_source=perplexity')).toBe('perplexity');
    expect(utmSourceOf('q=utm_source')).toBeUndefined();
    expect(utmSourceOf('')).toBeUndefined();
    expect(utmSourceOf(`utm_source=${'x'.repeat(500)}`)).toHaveLength(64);
    expect(referralOf(undefined, 'q=1')).toBeUndefined();
    expect(referralOf('x'.repeat(5000), '')!.referer).toHaveLength(512);
  });

  it('refuses a table that lists one host under two operators', () => {
    const bad = {
      sources: content.aiReferrers.sources,
      operators: [
        { operator: 'A', hosts: ['a.example'] },
        { operator: 'B', hosts: ['a.example'] },
      ],
    };
    expect(AiReferrersSchema.safeParse(bad).success).toBe(false);
    expect(
      AiReferrersSchema.safeParse({ ...bad, operators: [{ operator: 'A', hosts: ['https://a.example/'] }] }).success,
    ).toBe(false);
  });
});

describe('referrals in the ledger', () => {
  it("counts a person's visit by operator and table host, never the Referer, and never a bot's Referer", async () => {
    const t = await telemetry();
    const observe = (over: Parameters<typeof request>[0]) => t.observe(request(over));
    observe({ userAgent: PERSON, referral: { referer: 'https://chatgpt.com/c/secret-conversation-42?x=private' } });
    observe({ userAgent: PERSON, referral: { utmSource: 'chatgpt.com' } });
    observe({ userAgent: PERSON, referral: { referer: 'https://labs.perplexity.ai/x' } });
    observe({ userAgent: PERSON, referral: { referer: 'https://www.google.com/' } });
    observe({ userAgent: GPTBOT, referral: { referer: 'https://chatgpt.com/' } });
    // Not a person's page read: unknown clients (counted apart), a page that was not there, a POST.
    observe({ userAgent: 'Florienzh/1.0', referral: { referer: 'https://chatgpt.com/' } });
    observe({ userAgent: '', referral: { referer: 'https://chatgpt.com/' } });
    observe({ status: 404, userAgent: PERSON, referral: { referer: 'https://chatgpt.com/' } });
    observe({ method: 'POST', userAgent: PERSON, referral: { referer: 'https://chatgpt.com/' } });
    const s = t.snapshot();
    expect(s.referrals!.OpenAI).toMatchObject({
      visits: 2,
      sources: { 'chatgpt.com': 1, 'utm_source=chatgpt.com': 1 },
    });
    expect(s.referrals!.Perplexity).toMatchObject({ visits: 1, sources: { 'perplexity.ai': 1 } });
    expect(Object.keys(s.referrals!)).toEqual(['OpenAI', 'Perplexity']);
    expect(s.families.GPTBot!.requests).toBe(1);
    expect(JSON.stringify(s)).not.toMatch(/secret|private|labs\./);
    await t.close();
  });

  it('counts at most LEDGER_LIMITS.referralsPerClientHour visits of one address an operator an hour, live or from logs', async () => {
    const t = await telemetry();
    const visit = (remoteAddress: string, referer = 'https://chatgpt.com/') =>
      t.observe(request({ userAgent: PERSON, remoteAddress, referral: { referer } }));
    // One client's 500 "visits" count as the cap; 40 clients' one each count each.
    for (let i = 0; i < 500; i++) visit('198.51.100.7');
    for (let i = 0; i < 40; i++) visit(`203.0.113.${i}`);
    // An IPv6 host rotating through its /64 is one client.
    for (let i = 0; i < 500; i++) visit(`2001:db8:7:7::${i.toString(16)}`);
    // The same client's visits sent by another operator have their own share.
    visit('198.51.100.7', 'https://www.perplexity.ai/');
    expect(t.snapshot().referrals!.OpenAI!.visits).toBe(2 * LEDGER_LIMITS.referralsPerClientHour + 40);
    expect(t.snapshot().referrals!.Perplexity!.visits).toBe(1);
    // A log's lines from one address have the same share.
    const d = new Date();
    const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
    const stamp = `${String(d.getUTCDate()).padStart(2, '0')}/${month}/${d.getUTCFullYear()}:${d.toISOString().slice(11, 19)} +0000`;
    const parsed = parseLine(
      'combined',
      `198.51.100.8 - - [${stamp}] "GET / HTTP/1.1" 200 5 "https://chatgpt.com/" "${PERSON}"`,
    );
    const line = (parsed as { line: Parameters<typeof t.ingest>[0][number] }).line;
    expect(t.ingestBatch(Array.from({ length: 50 }, () => line)).counted).toBe(LEDGER_LIMITS.referralsPerClientHour);
    await t.close();
  });

  it("keeps each hour's share across batches counted out of time order, for the latest LEDGER_LIMITS.tallyHours hours", async () => {
    const t = await telemetry();
    const HOUR = 3_600_000;
    // Whole hours well inside the ledger's range, far from the clock.
    const base = Math.floor(Date.now() / HOUR) * HOUR - 10 * HOUR;
    const visits = (hour: number, n: number) =>
      t.ingestBatch(
        Array.from({ length: n }, () => {
          const stamp = new Date(base + hour * HOUR + 60_000).toISOString();
          const parsed = parseLine('json', {
            time: stamp,
            clientAddress: '198.51.100.9',
            method: 'GET',
            path: '/',
            status: 200,
            userAgent: PERSON,
            referer: 'https://chatgpt.com/',
          });
          return (parsed as { line: Parameters<typeof t.ingest>[0][number] }).line;
        }),
      ).counted;
    // A later hour's batch counted between two of an earlier hour's (the CLI keeps six in flight):
    // the earlier hour's share is not given again.
    expect([visits(0, 20), visits(1, 20), visits(0, 20)]).toEqual([
      LEDGER_LIMITS.referralsPerClientHour,
      LEDGER_LIMITS.referralsPerClientHour,
      0,
    ]);
    // The tallies of the latest hours are kept, no more: past them the earliest hour's goes, and
    // that hour starts afresh.
    for (let hour = 2; hour <= LEDGER_LIMITS.tallyHours; hour++)
      expect(visits(hour, 20)).toBe(LEDGER_LIMITS.referralsPerClientHour);
    expect(visits(1, 1)).toBe(0);
    expect(visits(0, 20)).toBe(LEDGER_LIMITS.referralsPerClientHour);
    await t.close();
  });

  it('counts referrals from ingested lines: combined (its Referer), JSON lines, and a utm_source in the target', async () => {
    const t = await telemetry();
    const time = new Date().toISOString();
    const stamp = (() => {
      const d = new Date();
      const m = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
      return `${String(d.getUTCDate()).padStart(2, '0')}/${m}/${d.getUTCFullYear()}:${d.toISOString().slice(11, 19)} +0000`;
    })();
    const combined = [
      `198.51.100.1 - - [${stamp}] "GET /doctrine HTTP/1.1" 200 512 "https://claude.ai/chat/9" "${PERSON}"`,
      `198.51.100.2 - - [${stamp}] "GET /?utm_source=chatgpt.com HTTP/1.1" 200 512 "-" "${PERSON}"`,
      `198.51.100.3 - - [${stamp}] "GET / HTTP/1.1" 200 512 "https://example.org/" "${PERSON}"`,
      // No visit: a page that was not there, an unknown client (counted apart).
      `198.51.100.4 - - [${stamp}] "GET /gone HTTP/1.1" 404 512 "https://claude.ai/chat/9" "${PERSON}"`,
      `198.51.100.5 - - [${stamp}] "GET / HTTP/1.1" 200 512 "https://claude.ai/chat/9" "Florienzh/1.0"`,
    ].map((l) => parseLine('combined', l));
    const lines = combined.flatMap((p) => (p && 'line' in p ? [p.line] : []));
    expect(lines).toHaveLength(5);
    // A parse worker groups the same lines dated hours before, without their addresses (recent lines
    // and visits from an address go alone): the same two visits.
    const earlier = new Date(Date.now() - 3 * 3_600_000).toISOString();
    const { agents } = groupLines(
      lines.map(({ clientAddress: _, ...l }) => ({ ...l, time: earlier })),
      { rules: telemetryRulesOf(content), robots: null },
      () => false,
      new Date(),
    );
    expect(agents.items.filter((i) => typeof i !== 'number' && i.referral !== null)).toHaveLength(2);
    expect(lines[0]!.referer).toBe('https://claude.ai/chat/9');
    expect(lines[1]!.utmSource).toBe('chatgpt.com');
    const json = parseLine('json', {
      method: 'GET',
      path: '/',
      host: 'h',
      userAgent: PERSON,
      status: 200,
      time,
      referer: 'https://gemini.google.com/app',
    });
    expect(json && 'line' in json && json.line.referer).toBe('https://gemini.google.com/app');
    const result = t.ingestBatch([...lines, (json as { line: (typeof lines)[0] }).line]);
    // The unknown client is counted as a request (apart from bots), not as a visit.
    expect(result.counted).toBe(4);
    expect(Object.fromEntries(Object.entries(t.snapshot().referrals!).map(([k, r]) => [k, r.visits]))).toEqual({
      Anthropic: 1,
      OpenAI: 1,
      Google: 1,
    });
    await t.close();
  });

  it('keeps at most LEDGER_LIMITS.referralOperators rows and sourcesPerOperator sources, whatever is counted', () => {
    const now = new Date();
    const s = emptySnapshot(now);
    for (let i = 0; i < 100; i++) countReferral(s, `Operator ${i}`, `host${i}.example`, now, now);
    for (let i = 0; i < 100; i++) countReferral(s, 'Operator 0', `source${i}.example`, now, now);
    expect(Object.keys(s.referrals!)).toHaveLength(LEDGER_LIMITS.referralOperators);
    expect(s.referrals![OTHER_OPERATORS]!.visits).toBe(100 - (LEDGER_LIMITS.referralOperators - 1));
    expect(Object.keys(s.referrals!['Operator 0']!.sources)).toHaveLength(LEDGER_LIMITS.sourcesPerOperator);
    expect(countReferral(s, 'OpenAI', 'chatgpt.com', new Date(now.getTime() - 30 * 86_400_000), now)).toBe(false);
    // Several processes' ledgers together stay within the same bound.
    const merged = mergeSnapshots(s, [structuredClone(s)]);
    expect(Object.keys(merged.referrals!)).toHaveLength(LEDGER_LIMITS.referralOperators);
    expect(merged.referrals!['Operator 0']!.visits).toBe(2 * s.referrals!['Operator 0']!.visits);
  });

  it("brings a saved ledger's referral buckets to the server's clock", () => {
    const then = new Date('2026-11-20T10:00:00Z');
    const s = emptySnapshot(then);
    countReferral(s, 'OpenAI', 'chatgpt.com', then, then);
    // Saved by a clock far ahead, loaded by one eight days later: nothing ahead, nothing past the window.
    s.referrals!.OpenAI!.hourly['2099-01-01T00:00:00Z'] = 5;
    s.referrals!.OpenAI!.lastSeen = '2099-01-01T00:00:00.000Z';
    const now = new Date('2026-11-28T12:00:00Z');
    keepClock(s, now);
    expect(s.referrals!.OpenAI!.hourly).toEqual({});
    expect(s.referrals!.OpenAI!.daily).toEqual({});
    expect(s.referrals!.OpenAI!.lastSeen).toBe(now.toISOString());
    expect(s.referrals!.OpenAI!.visits).toBe(1);
  });

  it("sets each operator's crawler requests beside its referred visits, with their ratio", () => {
    const now = new Date();
    const s = emptySnapshot(now);
    const hour = `${now.toISOString().slice(0, 13)}:00:00Z`;
    s.families.GPTBot = {
      family: 'GPTBot',
      class: 'Eater',
      operator: 'OpenAI',
      verify: 'ip-ranges',
      requests: 30,
      firstSeen: now.toISOString(),
      lastSeen: now.toISOString(),
      paths: {},
      status: {},
      hosts: {},
      hourly: { [hour]: 30 },
      daily: {},
      baitHits: 0,
      deepHits: 0,
      robotsFetches: 0,
      violations: 0,
      convertReads: 0,
      oaths: 0,
      messages: 0,
      verified: 0,
      failed: 0,
      unverifiable: 30,
    };
    for (let i = 0; i < 4; i++) countReferral(s, 'OpenAI', 'chatgpt.com', now, now);
    const doc = buildReferrals(content, s, now);
    const openai = doc.operators.find((o) => o.operator === 'OpenAI')!;
    expect(openai).toMatchObject({
      crawlerRequests: 30,
      referredVisits: 4,
      crawlToReferral: 7.5,
      sources: [{ source: 'chatgpt.com', visits: 4 }],
    });
    expect(openai.hourly).toEqual([{ hour, visits: 4, crawlerRequests: 30 }]);
    expect(doc.operators.find((o) => o.operator === 'Anthropic')).toMatchObject({
      crawlerRequests: 0,
      referredVisits: 0,
      crawlToReferral: null,
    });
    expect(doc.operators[0]!.operator).toBe('OpenAI');
  });
});
