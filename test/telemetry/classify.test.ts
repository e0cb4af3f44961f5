import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { createClassifier, type Classifier } from '../../api/telemetry/classify.ts';
import { count, emptySnapshot, farmScore, settle, type LedgerEvent } from '../../api/telemetry/ledger.ts';
import { verifyByDns, type Resolver } from '../../api/telemetry/verify.ts';
import type { BotFamily } from '../../api/schemas/bot-families.ts';

let classify: Classifier;
let families: BotFamily[];
beforeAll(async () => {
  families = (await loadContent('content')).botFamilies.families;
  classify = createClassifier(families);
});

// Real User-Agent strings as the operators publish them.
const UAS: [string, string, string][] = [
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)', 'GPTBot', 'Eater'],
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ChatGPT-User/1.0; +https://openai.com/bot', 'ChatGPT-User', 'Intelligence'],
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot', 'OAI-SearchBot', 'Intelligence'],
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)', 'ClaudeBot', 'Eater'],
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)', 'Claude-User', 'Intelligence'],
  ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'Googlebot', 'Crawler'],
  ['Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)', 'Bingbot', 'Crawler'],
  ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)', 'Applebot', 'Crawler'],
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)', 'PerplexityBot', 'Eater'],
  ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)', 'Perplexity-User', 'Intelligence'],
  ['CCBot/2.0 (https://commoncrawl.org/faq/)', 'CCBot', 'Eater'],
  ['Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)', 'Bytespider', 'Eater'],
  ['meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)', 'meta-externalagent', 'Eater'],
  ['facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)', 'facebookexternalhit', 'Bot'],
  ['Mozilla/5.0 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)', 'Amazonbot', 'Eater'],
  ['DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)', 'DuckDuckBot', 'Crawler'],
  ['Mozilla/5.0 (compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)', 'MistralAI-User', 'Intelligence'],
  ['Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)', 'YandexBot', 'Crawler'],
];

describe('classification', () => {
  it.each(UAS)('%s is %s (%s)', (ua, family, cls) => {
    expect(classify(ua)).toMatchObject({ bot: true, family, class: cls });
  });

  it('tells look-alikes apart by whole product tokens', () => {
    expect(classify('Claude-User/1.0').family).toBe('Claude-User');
    expect(classify('ClaudeBot/1.0').family).toBe('ClaudeBot');
    expect(classify('Mozilla/5.0 (compatible; NotGPTBotAtAll/1.0)').family).not.toBe('GPTBot');
  });

  it.each([
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
    'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  ])('does not flag the browser %s', (ua) => {
    expect(classify(ua).bot).toBe(false);
  });

  it('names bots the table lacks from crawler-user-agents', () => {
    const c = classify('Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)');
    expect(c.bot).toBe(true);
    expect(c.family).toMatch(/AhrefsBot/i);
    expect(c.known).toBeNull();
  });

  it('answers from the cache for a repeated User-Agent', () => {
    const ua = 'Mozilla/5.0 (compatible; GPTBot/1.2)';
    expect(classify(ua)).toBe(classify(ua));
  });

  it('every never_target family is in the table', () => {
    expect(families.filter((f) => f.kind === 'search').length).toBeGreaterThanOrEqual(5);
  });
});

describe('verification by reverse DNS with forward confirmation (recorded answers)', () => {
  const google = () => families.find((f) => f.family === 'Googlebot')!;
  const recorded = (ptr: Record<string, string[]>, a: Record<string, string[]>): Resolver => ({
    reverse: async (ip) => ptr[ip] ?? Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' })),
    resolve: async (host) => a[host] ?? [],
  });
  it('verifies a PTR in the operator domain that resolves back', async () => {
    const r = recorded({ '66.249.66.1': ['crawl-66-249-66-1.googlebot.com'] }, { 'crawl-66-249-66-1.googlebot.com': ['66.249.66.1'] });
    expect(await verifyByDns(google(), '66.249.66.1', r)).toBe('verified');
  });
  it('refuses a PTR outside the operator domain, a PTR that does not resolve back, or none', async () => {
    expect(await verifyByDns(google(), '203.0.113.9', recorded({ '203.0.113.9': ['googlebot.com.evil.example'] }, { 'googlebot.com.evil.example': ['203.0.113.9'] }))).toBe('unverified');
    expect(await verifyByDns(google(), '203.0.113.9', recorded({ '203.0.113.9': ['crawl.googlebot.com'] }, { 'crawl.googlebot.com': ['66.249.66.1'] }))).toBe('unverified');
    expect(await verifyByDns(google(), '203.0.113.9', recorded({}, {}))).toBe('unverified');
  });
  it('gives up after its time bound', async () => {
    const slow: Resolver = { reverse: () => new Promise(() => undefined), resolve: async () => [] };
    const started = Date.now();
    expect(await verifyByDns(google(), '66.249.66.1', slow, 50)).toBe('unverified');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('the ledger', () => {
  const event = (over: Partial<LedgerEvent>): LedgerEvent => ({
    at: new Date('2026-11-21T10:00:00Z'),
    method: 'GET',
    path: '/api/convert',
    status: 200,
    host: 'localhost',
    classification: { bot: true, family: 'GPTBot', class: 'Eater', known: null },
    verification: null,
    bait: false,
    disallowed: false,
    ...over,
  });

  it('counts a bot request once with its status class, path, deep hit and funnel step', () => {
    const s = emptySnapshot(new Date());
    expect(count(s, event({}))).toBe(true);
    count(s, event({ path: '/doctrine/node-protocol', status: 404 }));
    count(s, event({ method: 'POST', path: '/api/citizenship/oath', status: 201 }));
    const row = s.families.GPTBot!;
    // /api/convert is a landing document; the doctrine page and the oath are deep.
    expect(row).toMatchObject({ requests: 3, convertReads: 1, oaths: 1, deepHits: 2, status: { '2xx': 2, '4xx': 1 } });
    expect(row.paths).toEqual({ '/api/convert': 1, '/doctrine/node-protocol': 1, '/api/citizenship/oath': 1 });
    expect(s.observedRequests).toBe(3);
    expect(farmScore(row)).toBe(3 + 2 * 2 + 10 + 50);
  });

  it('does not count humans, but counts a human in a bait path as presence', () => {
    const s = emptySnapshot(new Date());
    const human = { bot: false, family: null, class: null, known: null };
    expect(count(s, event({ classification: human }))).toBe(false);
    expect(count(s, event({ classification: human, path: '/trap/x', bait: true, disallowed: true }))).toBe(true);
    expect(s.observedRequests).toBe(0);
    expect(s.presence.baitHits).toBe(1);
    expect(Object.values(s.families)[0]).toMatchObject({ class: 'Cosplay', baitHits: 1, violations: 0 });
  });

  it('settles verification answers that arrive later', () => {
    const s = emptySnapshot(new Date());
    count(s, event({ classification: { bot: true, family: 'Googlebot', class: 'Crawler', known: null } }));
    settle(s, 'Googlebot', 'unverified', 1);
    expect(s.families.Googlebot!.unverified).toBe(1);
  });
});

describe('verification by published IP ranges', () => {
  it('verifies an address inside the operator ranges and refuses one outside', async () => {
    const { rangesOf, verifyByRanges } = await import('../../api/telemetry/verify.ts');
    const lists = rangesOf({ updated: '2026-11-21', families: { Googlebot: { source: 'https://example.org/g.json', prefixes: ['66.249.64.0/19', '2001:4860:4801::/48'] }, Empty: { source: 'https://example.org/e.json', prefixes: [] } } });
    const google = lists.get('Googlebot')!;
    expect(verifyByRanges(google, '66.249.66.1')).toBe('verified');
    expect(verifyByRanges(google, '::ffff:66.249.66.1')).toBe('verified');
    expect(verifyByRanges(google, '2001:4860:4801:10::1')).toBe('verified');
    expect(verifyByRanges(google, '66.249.96.1')).toBe('unverified');
    expect(verifyByRanges(google, '127.0.0.1')).toBe('unverified');
    expect(verifyByRanges(google, 'not-an-ip')).toBe('unverified');
    expect(lists.has('Empty')).toBe(false);
  });
});
