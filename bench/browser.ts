/**
 * Debian's Chromium driven by puppeteer-core, shared by the browser tests, the screenshots and the
 * Lighthouse run: the same flags, a fresh profile each launch, the pages to visit, and the CSP the
 * gateway sends, applied here too so a page that breaks it fails before it ships.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

export const CHROMIUM = process.env.CHROME_PATH ?? '/usr/bin/chromium';

/** The policy on every HTML answer (set by the gateway; applied by the browser checks as well). */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Every HTML page a person reads. */
export const PAGES = [
  { name: 'home', path: '/' },
  { name: 'whats-next', path: '/whats-next' },
  { name: 'node-protocol', path: '/doctrine/node-protocol' },
  { name: 'collapse-vs-drift', path: '/doctrine/model-collapse-vs-constitutional-drift' },
  { name: 'api-reference', path: '/docs/api' },
  { name: 'bot-wall', path: '/bot-wall' },
  { name: 'not-found', path: '/no-such-page' },
] as const;

export const VIEWPORTS = [
  { name: 'phone', width: 360, height: 780 },
  { name: 'desktop', width: 1280, height: 900 },
] as const;
export const SCHEMES = ['light', 'dark'] as const;

export const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

export interface Chromium {
  browser: Browser;
  close(): Promise<void>;
}

/** Starts Chromium with a fresh profile that is removed on close. */
export async function launchChromium(extraArgs: string[] = []): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'agentnode-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    args: [...FLAGS, `--user-data-dir=${profile}`, ...extraArgs],
    defaultViewport: null,
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Adds the CSP header to every HTML document the page loads (unless the server already sends one)
 * and records each violation the browser reports.
 */
export async function enforceCsp(page: Page): Promise<string[]> {
  const violations: string[] = [];
  // Every load goes to the server (a 304 would be served from the cache without our header).
  await page.setCacheEnabled(false);
  const cdp = await page.createCDPSession();
  await cdp.send('Fetch.enable', {
    patterns: [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Response' }],
  });
  cdp.on('Fetch.requestPaused', (e) => {
    const headers = e.responseHeaders ?? [];
    const isHtml = headers.some((h) => h.name.toLowerCase() === 'content-type' && h.value.includes('text/html'));
    const has = headers.some((h) => h.name.toLowerCase() === 'content-security-policy');
    if (!isHtml || has) return void cdp.send('Fetch.continueRequest', { requestId: e.requestId }).catch(() => {});
    // Fetch.continueResponse drops changed headers for documents; fulfilling with the same body keeps them.
    void cdp
      .send('Fetch.getResponseBody', { requestId: e.requestId })
      .then((b) =>
        cdp.send('Fetch.fulfillRequest', {
          requestId: e.requestId,
          responseCode: e.responseStatusCode ?? 200,
          responseHeaders: [...headers, { name: 'Content-Security-Policy', value: CSP }],
          body: b.base64Encoded ? b.body : Buffer.from(b.body).toString('base64'),
        }),
      )
      .catch(() => {});
  });
  await page.exposeFunction('__cspViolation', (text: string) => void violations.push(text));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { __cspViolation(t: string): void }).__cspViolation(
        `${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`,
      );
    });
  });
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  return violations;
}

/** Console errors and failed requests (a 404 favicon shows here). */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} ${m.location().url ?? ''}`);
  });
  page.on('pageerror', (e) => void errors.push(String(e)));
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.url().includes('/no-such-page')) errors.push(`${r.status()} ${r.url()}`);
  });
  return errors;
}

export async function emulate(page: Page, width: number, height: number, scheme: 'light' | 'dark'): Promise<void> {
  await page.setViewport({ width, height, deviceScaleFactor: 1, isMobile: width < 600, hasTouch: width < 600 });
  await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
}

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core's WCAG 2.x A and AA rules and best practices on the page as it is now. */
export async function axe(page: Page): Promise<AxeViolation[]> {
  // Evaluated through DevTools, which the page's CSP does not govern (a script tag would be refused).
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const run = (
      window as unknown as {
        axe: {
          run(
            ctx: Document,
            o: object,
          ): Promise<{
            violations: {
              id: string;
              impact: string | null;
              help: string;
              nodes: { target: string[]; failureSummary?: string }[];
            }[];
          }>;
        };
      }
    ).axe.run;
    const result = await run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
      resultTypes: ['violations'],
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary ?? ''}`),
    }));
  });
}

/** How far the page reaches past the viewport's right edge, in CSS pixels. */
export const overflow = (page: Page): Promise<number> =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const CLAUDE =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)';
const CHATGPT_USER =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot';
const BING = 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)';

/** A few crawlers' requests, so the bot wall has something to show. */
export async function seedCrawlers(base: string): Promise<void> {
  const visits: [string, string, number][] = [
    [GPT, '/api/convert', 6],
    [GPT, '/robots.txt', 1],
    [GPT, '/doctrine/node-protocol', 3],
    [CLAUDE, '/llms.txt', 4],
    [CLAUDE, '/trap/', 1],
    [CHATGPT_USER, '/whats-next', 2],
    [BING, '/', 2],
    [BING, '/sitemap.xml', 1],
  ];
  for (const [ua, path, n] of visits)
    for (let i = 0; i < n; i++)
      await fetch(base + path, { headers: { 'User-Agent': ua } }).then((r) => r.arrayBuffer());
}
