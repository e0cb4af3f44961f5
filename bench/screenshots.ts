/**
 * npm run screenshots: every page at 360 and 1280 px, in light and dark, from the real server on a
 * fresh build. All go to test-results/screenshots/ (ignored by git). Only `npm run screenshots --
 * --update-docs` copies the two the reference shows into docs/screenshots/ (tracked files).
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { emulate, launchChromium, PAGES, SCHEMES, VIEWPORTS } from './browser.ts';
import { serveSite } from './site.ts';

const out = process.env.SCREENSHOTS_DIR ?? 'test-results/screenshots';
const SHOWN = ['bot-wall-1280-dark.png', 'api-reference-360-light.png'];
const updateDocs = process.argv.includes('--update-docs');
mkdirSync(out, { recursive: true });
if (updateDocs) mkdirSync('docs/screenshots', { recursive: true });

const server = await serveSite();
const chromium = await launchChromium();
try {
  for (const { name, path } of PAGES) {
    for (const { width, height } of VIEWPORTS) {
      for (const scheme of SCHEMES) {
        const page = await chromium.browser.newPage();
        await page.setUserAgent({
          userAgent:
            'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36',
        });
        await emulate(page, width, height, scheme);
        // The reference is long: its picture is one operation, the oath, as a reader lands on it.
        const long = name === 'api-reference';
        await page.goto(server.url + path + (long ? '#post-api-citizenship-oath' : ''), { waitUntil: 'networkidle0' });
        const file = `${name}-${width}-${scheme}.png`;
        await page.screenshot({ path: `${out}/${file}`, fullPage: !long });
        if (updateDocs && SHOWN.includes(file)) copyFileSync(`${out}/${file}`, `docs/screenshots/${file}`);
        console.log(`${out}/${file}`);
        await page.close();
      }
    }
  }
} finally {
  await chromium.close();
  await server.stop();
}
