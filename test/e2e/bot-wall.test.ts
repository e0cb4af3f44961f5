import { mkdirSync } from 'node:fs';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforceCsp, launchChromium, seedCrawlers, type Chromium } from '../../bench/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const NEWCOMER = 'CCBot/2.0 (https://commoncrawl.org/faq/)';

let server: TestServer;
let chromium: Chromium;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
  await seedCrawlers(server.url);
  for (const path of ['/<script>pwned=1</script>', '/<img src=x onerror=pwned=2>'])
    await fetch(server.url + path, { headers: { 'User-Agent': GPT } });
  chromium = await launchChromium();
});
afterAll(async () => {
  await chromium?.close();
  await server?.stop();
});

/** Opens the wall with a 2-second update period and a marker that a reload would erase. */
async function openWall(query = ''): Promise<{ page: Page; csp: string[] }> {
  const page = await chromium.browser.newPage();
  const csp = await enforceCsp(page);
  await page.setViewport({ width: 1280, height: 900 });
  // A person's browser: HeadlessChrome would be counted as a bot family of its own.
  await page.setUserAgent({
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36',
  });
  const res = await page.goto(`${server.url}/bot-wall?every=2${query}`);
  expect(res?.status()).toBe(200);
  await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
  return { page, csp };
}
const stillSamePage = (page: Page) =>
  page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded === true);
const updates = (page: Page) => page.$eval('#wall', (el) => Number((el as HTMLElement).dataset.updates ?? 0));

describe('/bot-wall in Chromium', () => {
  it('lists every family once, sorted by requests, with data-family and data-requests, and shows hostile names as text', async () => {
    const { page, csp } = await openWall();
    const rows = await page.$$eval('#families > li', (lis) =>
      lis.map((li) => ({ family: li.dataset.family, requests: Number(li.dataset.requests) })),
    );
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const r of rows) expect(r.family && Number.isInteger(r.requests)).toBe(true);
    expect(rows.map((r) => r.requests)).toEqual([...rows.map((r) => r.requests)].sort((a, b) => b - a));
    const doc = (await (await fetch(`${server.url}/bot-wall.json`)).json()) as {
      botTraffic: { families: { family: string }[] };
    };
    expect(new Set(rows.map((r) => r.family))).toEqual(new Set(doc.botTraffic.families.map((f) => f.family)));
    // The bars of the family chart come in the same order.
    const bars = await page.$$eval('[data-chart="families"] tbody th', (th) => th.map((t) => t.textContent));
    expect(bars).toEqual(
      rows
        .filter((r) => r.requests > 0)
        .slice(0, 12)
        .map((r) => r.family),
    );
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.$eval('#families', (el) => el.textContent)).toContain('/<script>pwned=1</script>');
    expect(csp).toEqual([]);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/bot-wall.png', fullPage: true });
    await page.close();
  });

  it("shows a new crawler's requests without a reload", async () => {
    const { page, csp } = await openWall();
    for (let i = 0; i < 3; i++) await fetch(`${server.url}/llms.txt`, { headers: { 'User-Agent': NEWCOMER } });
    const doc = (await (await fetch(`${server.url}/bot-wall.json`)).json()) as {
      botTraffic: { families: { family: string; requests: number }[] };
    };
    const newcomer = doc.botTraffic.families.find((f) => f.requests === 3 && f.family.toLowerCase().includes('ccbot'));
    expect(newcomer, JSON.stringify(doc.botTraffic.families.map((f) => f.family))).toBeDefined();
    const row = await page.waitForSelector(`#families > li[data-family="${newcomer!.family}"][data-requests="3"]`, {
      timeout: 15_000,
    });
    expect(row).not.toBeNull();
    // A row the script made has its body drawn when it is opened, from the latest update, not by
    // the next one (updates paused).
    await page.click('#pause');
    await page.click(`#families > li[data-family="${newcomer!.family}"] summary`);
    await page.waitForFunction(
      (family) =>
        document
          .querySelector(`#families > li[data-family="${family}"] details[open] .body`)
          ?.textContent?.includes('How a claim is checked'),
      { timeout: 5_000 },
      newcomer!.family,
    );
    expect(await stillSamePage(page)).toBe(true);
    expect(await page.$eval('#updated time', (t) => t.getAttribute('datetime'))).toBeTruthy();
    expect(csp).toEqual([]);
    await page.close();
  });

  it('opens a family row to its verification, robots.txt and paths, and keeps it open across updates', async () => {
    const { page } = await openWall();
    const first = await page.$eval('#families > li', (li) => li.dataset.family!);
    await page.click('#families > li:first-child summary');
    const body = `#families > li[data-family="${first}"] details[open] .body`;
    const text = await page.$eval(body, (el) => el.textContent!);
    for (const label of [
      'How a claim is checked',
      'Verified',
      'Failed verification',
      'Cannot be verified',
      'robots.txt fetches',
      'Hits on disallowed paths',
      'First seen',
    ])
      expect(text).toContain(label);
    expect(await page.$$eval(`${body} tbody tr`, (tr) => tr.length)).toBeGreaterThan(0);
    const before = await updates(page);
    await page.waitForFunction(
      (n) => Number((document.getElementById('wall') as HTMLElement).dataset.updates ?? 0) > n,
      { timeout: 15_000 },
      before,
    );
    expect(await page.$(body)).not.toBeNull();
    await page.close();
  });

  it('changes the charts with the range control, without a reload, and the meter always equals the chart', async () => {
    const { page, csp } = await openWall();
    const columns = () => page.$$eval('[data-chart="time"] tbody td', (td) => td.map((t) => Number(t.textContent)));
    const meter = () => page.$eval('#meters li:first-child .value', (el) => Number(el.textContent));
    const caption = () => page.$eval('[data-chart="time"] figcaption', (el) => el.textContent);
    expect(await columns()).toHaveLength(25);
    const day = await columns();
    expect(day.reduce((a, b) => a + b, 0)).toBe(await meter());
    await page.click('.range a[data-range="7d"]');
    await page.waitForSelector('.range a[data-range="7d"][aria-current="true"]');
    expect(await caption()).toContain('per day');
    const week = await columns();
    expect(week).toHaveLength(8);
    expect(week.reduce((a, b) => a + b, 0)).toBe(await meter());
    expect(page.url()).toContain('range=7d');
    await page.click('.range a[data-range="1h"]');
    await page.waitForSelector('.range a[data-range="1h"][aria-current="true"]');
    expect(await columns()).toHaveLength(2);
    expect(await stillSamePage(page)).toBe(true);
    // The server honours the same range for a reader without JavaScript.
    const res = await fetch(`${server.url}/bot-wall?range=7d`);
    expect(await res.text()).toContain('Requests per day');
    expect(csp).toEqual([]);
    await page.close();
  });

  it('pauses and resumes its updates from a button', async () => {
    const { page } = await openWall();
    await page.click('#pause');
    expect(await page.$eval('#pause', (b) => [b.getAttribute('aria-pressed'), b.textContent])).toEqual([
      'true',
      'Resume updates',
    ]);
    const before = await updates(page);
    await page.click('#pause');
    expect(await page.$eval('#pause', (b) => b.getAttribute('aria-pressed'))).toBe('false');
    // Resuming reads at once.
    await page.waitForFunction(
      (n) => Number((document.getElementById('wall') as HTMLElement).dataset.updates ?? 0) > n,
      { timeout: 5_000 },
      before,
    );
    await page.close();
  });
});
