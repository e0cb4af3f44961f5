import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  axe,
  collectErrors,
  emulate,
  enforceCsp,
  launchChromium,
  overflow,
  SCHEMES,
  seedCrawlers,
  VIEWPORTS,
  type Chromium,
} from '../../bench/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const PERSON = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36';
const SECRET = 'secret-conversation-7f3a';

let server: TestServer;
let chromium: Chromium;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0', TELEMETRY_FLUSH_MS: '200' });
  await seedCrawlers(server.url);
  const visit = (path: string, headers: Record<string, string>) =>
    fetch(server.url + path, { headers: { 'User-Agent': PERSON, ...headers } }).then((r) => r.arrayBuffer());
  await visit('/', { Referer: `https://chatgpt.com/c/${SECRET}?q=private` });
  await visit(`/whats-next?utm_source=chatgpt.com&utm_medium=${SECRET}`, {});
  await visit('/', { Referer: 'https://www.perplexity.ai/search/abc' });
  await visit('/', { Referer: 'https://www.google.com/' });
  chromium = await launchChromium();
});
afterAll(async () => {
  await chromium?.close();
  await server?.stop();
});

interface Operator {
  operator: string;
  crawlerRequests: number;
  referredVisits: number;
  crawlToReferral: number | null;
  sources: { source: string; visits: number }[];
}

describe('what AI sends back, from live traffic', () => {
  it('counts people from AI products by operator beside its crawlers, with the ratio, in /bot-wall.json', async () => {
    const res = await fetch(`${server.url}/bot-wall.json`);
    const text = await res.text();
    const doc = JSON.parse(text) as {
      referrals: { operators: Operator[] };
      botTraffic: { families: { family: string; operator: string | null; requests: number }[] };
    };
    const openai = doc.referrals.operators.find((o) => o.operator === 'OpenAI')!;
    const crawls = doc.botTraffic.families.filter((f) => f.operator === 'OpenAI').reduce((n, f) => n + f.requests, 0);
    expect(crawls).toBeGreaterThan(0);
    expect(openai).toMatchObject({
      crawlerRequests: crawls,
      referredVisits: 2,
      crawlToReferral: Math.round((100 * crawls) / 2) / 100,
    });
    expect(openai.sources).toEqual(
      expect.arrayContaining([
        { source: 'chatgpt.com', visits: 1 },
        { source: 'utm_source=chatgpt.com', visits: 1 },
      ]),
    );
    expect(doc.referrals.operators.find((o) => o.operator === 'Perplexity')).toMatchObject({ referredVisits: 1 });
    expect(doc.referrals.operators.find((o) => o.operator === 'Google')).toMatchObject({ referredVisits: 0 });
    // People are no bot family.
    expect(doc.botTraffic.families.some((f) => /Chrome/.test(f.family))).toBe(false);
    expect(text).not.toContain(SECRET);
  });

  it('never writes the Referer or the query to the data folder', async () => {
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
    // Once the ledger with the referral is saved (TELEMETRY_FLUSH_MS).
    const all = await waitFor(
      () =>
        files(server.dataDir)
          .map((f) => readFileSync(f, 'latin1'))
          .join('\n'),
      { until: (text) => text.includes('utm_source=chatgpt.com'), what: 'the ledger saved to the data folder' },
    );
    expect(all).toContain('utm_source=chatgpt.com');
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain('private');
  });
});

describe.each(VIEWPORTS)('the wall\'s "What AI sends back" at $width px', ({ width, height }) => {
  it.each(SCHEMES)(
    'in %s: a row an operator, no axe violation, no sideways scroll, no CSP violation',
    async (scheme) => {
      const page = await chromium.browser.newPage();
      const csp = await enforceCsp(page);
      const errors = collectErrors(page);
      await emulate(page, width, height, scheme);
      await page.setUserAgent({ userAgent: PERSON });
      expect((await page.goto(`${server.url}/bot-wall?range=24h`))?.status()).toBe(200);
      const rows = await page.$$eval('#referrals tr[data-operator]', (trs) =>
        trs.map((tr) => ({
          operator: (tr as HTMLElement).dataset.operator,
          visits: Number((tr as HTMLElement).dataset.visits),
        })),
      );
      expect(rows).toEqual(
        expect.arrayContaining([
          { operator: 'OpenAI', visits: 2 },
          { operator: 'Perplexity', visits: 1 },
        ]),
      );
      expect(await axe(page)).toEqual([]);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      expect(csp).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    },
    60_000,
  );
});
