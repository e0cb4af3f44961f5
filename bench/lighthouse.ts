/**
 * npm run lighthouse: Lighthouse (mobile, its default) on every page, in Debian's Chromium
 * (CHROME_PATH), against the real server on a fresh build. Each page runs RUNS times (default 3)
 * and the row shows the median score of each category, as Lighthouse's docs advise on a noisy
 * machine. The target is 95 or more in each category. Reports go to bench/results/lighthouse/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';
import { CHROMIUM, FLAGS, PAGES } from './browser.ts';
import { serveSite } from './site.ts';

const CATEGORIES = ['performance', 'accessibility', 'best-practices', 'seo'] as const;
const out = 'bench/results/lighthouse';
mkdirSync(out, { recursive: true });

const server = await serveSite();
const chrome = await chromeLauncher.launch({
  chromePath: CHROMIUM,
  chromeFlags: FLAGS.filter((f) => f !== '--no-first-run'),
});
const rows: string[] = [];
const failing: string[] = [];
try {
  // ONLY=bot-wall,home runs some pages (names as in bench/browser.ts).
  const only = process.env.ONLY?.split(',');
  for (const { name, path } of PAGES) {
    if (path === '/no-such-page' || (only && !only.includes(name))) continue;
    const runs: NonNullable<Awaited<ReturnType<typeof lighthouse>>>[] = [];
    for (let i = 0; i < Number(process.env.RUNS ?? 3); i++) {
      const result = await lighthouse(server.url + path, {
        port: chrome.port,
        output: 'json',
        logLevel: 'error',
        onlyCategories: [...CATEGORIES],
      });
      if (!result) throw new Error(`no result for ${path}`);
      runs.push(result);
    }
    const median = (c: (typeof CATEGORIES)[number]) => {
      const sorted = runs.map((r) => Math.round((r.lhr.categories[c]?.score ?? 0) * 100)).sort((a, b) => a - b);
      return sorted[Math.floor(sorted.length / 2)]!;
    };
    const result = runs[0]!;
    writeFileSync(`${out}/${name}.json`, result.report as string);
    const scores = CATEGORIES.map(median);
    rows.push(`| ${path} | ${scores.join(' | ')} |`);
    scores.forEach((s, i) => {
      if (s < 95) {
        const cat = result.lhr.categories[CATEGORIES[i]!]!;
        const lost = cat.auditRefs
          .filter((r) => r.weight > 0 && (result.lhr.audits[r.id]?.score ?? 1) < 1)
          .map((r) => r.id);
        failing.push(`${path} ${CATEGORIES[i]} ${s}: ${lost.join(', ')}`);
      }
    });
  }
} finally {
  await chrome.kill();
  await server.stop();
}
console.log(
  `Lighthouse ${(await import('lighthouse/package.json', { with: { type: 'json' } })).default.version}, mobile, median of ${process.env.RUNS ?? 3} runs, ${new Date().toISOString().slice(0, 10)}\n`,
);
console.log('| page | performance | accessibility | best practices | SEO |\n|---|---|---|---|---|');
console.log(rows.join('\n'));
if (failing.length) console.log(`\nBelow 95:\n${failing.join('\n')}`);
