import { describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import {
  CLASSIFIED_AGENTS,
  groupLines,
  type GroupRules,
  REFERERS,
  type Classified,
  type Referral,
} from '../../api/telemetry/log-formats/line-groups.ts';
import { telemetryRulesOf, underAny } from '../../api/telemetry/telemetry.ts';
import type { LogLine } from '../../api/telemetry/log-formats/types.ts';

// A log whose every line names a User-Agent never seen before (a crawler rotating its string, or a
// log made to fill the worker's memory): the worker's answers by User-Agent stay within their bound,
// and every line is still counted, grouped or alone.
/** A worker's rules as parse-worker.ts makes them, without robots.txt files, with the memos a test watches. */
async function workerRules(memos: Pick<GroupRules, 'referred' | 'classIds'>) {
  const content = await loadContent('content');
  const rules = { rules: telemetryRulesOf(content), robots: null, classified: new Map<string, Classified>(), ...memos };
  return { rules, isBait: underAny(content.crawlPolicy.disallow) };
}

describe("an ingest worker's memory under a flood of distinct User-Agents", () => {
  it(`keeps at most ${CLASSIFIED_AGENTS} User-Agents' answers and numbers of what they count as, however many it reads`, async () => {
    const classIds = new Map<string, number>();
    const { rules, isBait } = await workerRules({ classIds });
    const hourAgo = new Date(Date.now() - 3 * 3_600_000).toISOString();
    let seen = 0;
    for (let batch = 0; batch < 5; batch++) {
      const lines: LogLine[] = Array.from({ length: 10_000 }, (_, i) => ({
        method: 'GET',
        path: `/docs/${i % 50}`,
        host: 'example.org',
        status: 200,
        time: hourAgo,
        // Half invented bots (counted alone), half people's browsers with a rotating build (quiet).
        userAgent:
          i % 2 === 0
            ? `Mozilla/5.0 (compatible; FloodBot${batch}x${i}/1.0; +https://flood.example/bot)`
            : `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.${batch}.${i} Safari/537.36`,
      }));
      seen += lines.length;
      const { alone, agents } = groupLines(lines, rules, isBait, new Date());
      expect(rules.classified.size).toBeLessThanOrEqual(CLASSIFIED_AGENTS);
      // Each invented name is a family of its own, so a class of its own.
      expect(classIds.size).toBeLessThanOrEqual(CLASSIFIED_AGENTS);
      expect(classIds.size).toBeGreaterThan(0);
      // Every bot line is counted (the invented names alone, in place); the people's lines only dated.
      const quiet = (agents.quiet?.counts ?? []).reduce((a, b) => a + b, 0);
      expect(alone.length).toBe(5_000);
      expect(quiet).toBe(5_000);
    }
    expect(seen).toBe(50_000);
  });

  it(`keeps at most ${REFERERS} Referers' referrals, however many it reads, and still counts each visit an AI product sent`, async () => {
    const referred = new Map<string, Referral | null>();
    const { rules, isBait } = await workerRules({ referred });
    const hourAgo = new Date(Date.now() - 3 * 3_600_000).toISOString();
    const browser =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    for (let batch = 0; batch < 3; batch++) {
      // Every line a visit from chatgpt.com with a Referer never seen before.
      const lines: LogLine[] = Array.from({ length: 5_000 }, (_, i) => ({
        method: 'GET',
        path: '/docs/start',
        host: 'example.org',
        status: 200,
        time: hourAgo,
        userAgent: browser,
        referer: `https://chatgpt.com/c/${batch}-${i}`,
      }));
      const { agents } = groupLines(lines, rules, isBait, new Date());
      expect(referred.size).toBeLessThanOrEqual(REFERERS);
      const counted = (agents.items ?? []).reduce<number>(
        (n, item) => n + (typeof item === 'number' ? 1 : item.referral ? item.n : 0),
        0,
      );
      expect(counted).toBe(5_000);
    }
    expect(referred.size).toBeGreaterThan(0);
  });
});
