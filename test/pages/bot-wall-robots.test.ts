import { describe, expect, it } from 'vitest';
import { familyItem } from '../../src/lib/bot-wall-render.ts';
import { renderRobotsTxt } from '../../src/lib/bot-wall-robots.ts';
import { toWallView } from '../../src/lib/bot-wall-view.ts';

const NOW = new Date('2026-11-22T18:30:00Z');
const at = NOW.toISOString();
const family = (name: string, robotsTxt?: unknown) => ({
  family: name,
  requests: 4,
  firstSeen: at,
  lastSeen: at,
  topPaths: [],
  statusCounts: {},
  verification: 'not verifiable',
  robotsTxtFetches: 1,
  ...(robotsTxt ? { robotsTxt } : {}),
});
const doc = {
  generatedAt: at,
  botTraffic: {
    windowStartedAt: at,
    families: [
      family('GPTBot', {
        compliance: 'violating',
        judged: 4,
        violations: 3,
        violationsAfterFetch: 2,
        fetchedRobotsTxt: true,
        firstFetch: at,
        rules: [
          {
            host: 'blog.example',
            version: 'abc123',
            line: 7,
            rule: 'Disallow: /<b>x</b>',
            agent: 'gptbot',
            requests: 3,
            afterFetch: 2,
            paths: [{ path: '/<b>x</b>/1', requests: 3 }],
          },
        ],
      }),
      family('ClaudeBot', {
        compliance: 'compliant',
        judged: 4,
        violations: 0,
        violationsAfterFetch: 0,
        fetchedRobotsTxt: false,
        firstFetch: null,
        rules: [],
      }),
      // A document from before robots.txt was judged.
      family('Old'),
    ],
  },
};

describe('the robots.txt view', () => {
  it('reads each family\'s compliance, and degrades to "not judged" for a document without it', () => {
    const v = toWallView(doc, '24h', NOW);
    const by = Object.fromEntries(v.families.map((f) => [f.family, f.robotsTxt]));
    expect(by.GPTBot).toMatchObject({
      compliance: 'violating',
      violations: 3,
      violationsAfterFetch: 2,
      rules: [{ line: 7, rule: 'Disallow: /<b>x</b>', requests: 3 }],
    });
    expect(by.ClaudeBot).toMatchObject({ compliance: 'compliant', fetchedRobotsTxt: false });
    expect(by.Old).toEqual({
      compliance: 'not judged',
      judged: 0,
      violations: 0,
      violationsAfterFetch: 0,
      fetchedRobotsTxt: true,
      rules: [],
    });
  });

  it('lists judged families in a table with a compliance column, most violations first, rule text escaped', () => {
    const html = renderRobotsTxt(toWallView(doc, '24h', NOW).families);
    expect(html.indexOf('data-robots-family="GPTBot"')).toBeLessThan(html.indexOf('data-robots-family="ClaudeBot"'));
    expect(html).toContain('<th scope="col">Compliance</th>');
    expect(html).toContain('3 disallowed requests');
    expect(html).toContain('<span class="ok">compliant</span>');
    expect(html).toContain('<code>Disallow: /&lt;b&gt;x&lt;/b&gt;</code>');
    expect(html).not.toContain('<b>');
    // "Old" was never judged and is still listed, as it fetched robots.txt.
    expect(html).toContain('data-robots-family="Old" data-compliance="not judged"');
    expect(renderRobotsTxt([])).toContain('No crawler judged yet');
  });

  it('opens a family row to the rules it broke: line, host, group, version, paths', () => {
    const v = toWallView(doc, '24h', NOW);
    const row = familyItem(
      v.families.find((f) => f.family === 'GPTBot')!,
      v,
    );
    expect(row).toContain('robots.txt <span class="warn">3 disallowed requests</span>');
    expect(row).toMatch(/line 7 on blog\.example, group <code>gptbot<\/code>, version <code>abc123<\/code>/);
    expect(row).toContain('<code>/&lt;b&gt;x&lt;/b&gt;/1</code> × 3');
    expect(row).toContain('2 after fetching it');
    const old = familyItem(
      v.families.find((f) => f.family === 'Old')!,
      v,
    );
    expect(old).not.toContain('Disallow rules broken');
  });
});
