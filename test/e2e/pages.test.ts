import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  axe,
  collectErrors,
  emulate,
  enforceCsp,
  launchChromium,
  overflow,
  PAGES,
  SCHEMES,
  seedCrawlers,
  VIEWPORTS,
  type Chromium,
} from '../../bench/browser.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let chromium: Chromium;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
  await seedCrawlers(server.url);
  chromium = await launchChromium();
});
afterAll(async () => {
  await chromium?.close();
  await server?.stop();
});

describe('the built HTML obeys the CSP by construction', () => {
  const html = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? html(join(dir, e.name)) : e.name.endsWith('.html') ? [join(dir, e.name)] : [],
    );
  it('has no inline script, inline style, style attribute or inline handler in any prebuilt page', () => {
    const files = html(join(TEST_DIST, 'client'));
    expect(files.length).toBeGreaterThan(4);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      expect(text, file).not.toMatch(/<style[\s>]/i);
      expect(text, file).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
      expect(text, file).not.toMatch(/\sstyle=["']/i);
      expect(text, file).not.toMatch(/\son[a-z]+=["']/i);
      expect(text, file).toMatch(/<link rel="stylesheet" href="\/_astro\/[^"]+\.css"/);
    }
  });
  it('serves the favicon in both forms', async () => {
    for (const path of ['/favicon.svg', '/favicon.ico'])
      expect((await fetch(server.url + path)).status, path).toBe(200);
  });
});

describe.each(VIEWPORTS)('every page at $width px', ({ width, height }) => {
  it.each(SCHEMES)(
    'in %s: no axe violation, no sideways scroll, no CSP violation, no console error',
    async (scheme) => {
      for (const { path } of PAGES) {
        const page = await chromium.browser.newPage();
        const csp = await enforceCsp(page);
        const errors = collectErrors(page);
        await emulate(page, width, height, scheme);
        const res = await page.goto(server.url + path, { waitUntil: 'load' });
        expect(res?.status(), path).toBe(path === '/no-such-page' ? 404 : res?.status() === 304 ? 304 : 200);
        expect(
          await page.evaluate(() => getComputedStyle(document.body).backgroundColor),
          `${path} has the stylesheet`,
        ).not.toBe('rgba(0, 0, 0, 0)');
        const violations = await axe(page);
        expect(violations, `${path} ${width}px ${scheme}:\n${JSON.stringify(violations, null, 2)}`).toEqual([]);
        expect(await overflow(page), `${path} is wider than ${width}px`).toBeLessThanOrEqual(0);
        expect(csp, `${path} CSP`).toEqual([]);
        expect(
          errors.filter((e) => !e.includes('/no-such-page')),
          `${path} console`,
        ).toEqual([]);
        await page.close();
      }
    },
    120_000,
  );
});

describe('the look', () => {
  it('follows prefers-color-scheme and shows a visible focus ring', async () => {
    const page = await chromium.browser.newPage();
    const colours: Record<string, string> = {};
    for (const scheme of SCHEMES) {
      await emulate(page, 360, 780, scheme);
      await page.goto(`${server.url}/whats-next`);
      colours[scheme] = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    }
    expect(colours.light).not.toBe(colours.dark);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement!);
      return `${s.outlineStyle} ${s.outlineWidth}`;
    });
    expect(outline).toBe('solid 3px');
    await page.close();
  });

  it('drops the navigation in print', async () => {
    const page = await chromium.browser.newPage();
    await page.goto(`${server.url}/docs/api`);
    await page.emulateMediaType('print');
    expect(await page.$eval('.site-header', (el) => getComputedStyle(el).display)).toBe('none');
    await page.emulateMediaType('screen');
    expect(await page.$eval('.site-header', (el) => getComputedStyle(el).display)).not.toBe('none');
    await page.close();
  });

  it('gives long doctrine notes a table of contents whose links reach their headings, and links the Markdown twin', async () => {
    const page = await chromium.browser.newPage();
    await page.goto(`${server.url}/doctrine/node-protocol`);
    const targets = await page.$$eval('nav.toc a', (links) => links.map((a) => a.getAttribute('href')!));
    expect(targets.length).toBeGreaterThanOrEqual(3);
    for (const href of targets) expect(await page.$(`[id="${href.slice(1)}"]`), href).not.toBeNull();
    expect(await page.$$eval('h1', (h) => h.filter((x) => x.checkVisibility()).length)).toBe(1);
    const twin = await page.$eval('a[type="text/markdown"]', (a) => a.getAttribute('href'));
    expect((await fetch(server.url + twin)).headers.get('content-type')).toContain('text/markdown');
    await page.close();
  });
});
