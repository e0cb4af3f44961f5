import { mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server.ts';

// Debian's Chromium, never a downloaded browser (.ci/run installs it when it is missing).
const CHROMIUM = '/usr/bin/chromium';
const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';

let server: ServerProcess;
let browser: Browser;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('/bot-wall in Chromium', () => {
  it('draws the charts and the funnel, shows hostile names as text, and saves a screenshot', async () => {
    for (const path of ['/api/convert', '/llms.txt', '/doctrine/node-protocol', '/<script>pwned=1</script>', '/<img src=x onerror=pwned=2>']) {
      await fetch(server.url + path, { headers: { 'User-Agent': GPT } });
    }
    const page = await browser.newPage();
    const response = await page.goto(`${server.url}/bot-wall`);
    expect(response?.status()).toBe(200);
    expect(await page.locator('h1').textContent()).toBeTruthy();
    const charts = page.locator('figure.chart svg');
    expect(await charts.count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator('figure.chart svg rect.bar').count()).toBeGreaterThan(3);
    const widths = await page.locator('figure.chart svg rect.bar').evaluateAll((rects) => rects.map((r) => r.getBoundingClientRect().width));
    expect(widths.some((w) => w > 50)).toBe(true);
    // One row in the funnel and one in the species table, with its verification and a drawn line.
    expect(await page.locator('table tbody tr', { hasText: 'GPTBot' }).count()).toBe(2);
    const gpt = page.locator('table tbody tr', { hasText: 'not verifiable' }).filter({ hasText: 'GPTBot' });
    expect(await gpt.count()).toBe(1);
    const line = await gpt.locator('svg.sparkline polyline').getAttribute('points');
    expect(new Set(line!.split(' ').map((p) => p.split(',')[1])).size).toBeGreaterThan(1);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('script').count()).toBe(0);
    const text = await page.locator('body').textContent();
    expect(text).toContain('/<script>pwned=1</script>');
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/bot-wall.png', fullPage: true });
    await page.close();
  });
});
