import { describe, expect, it } from 'vitest';
import {
  CLASS_CARD_FAMILIES,
  familyItem,
  renderCharts,
  renderClasses,
  renderFamilies,
  renderMeters,
} from '../../src/lib/bot-wall-render.ts';
import { rangeBuckets, toWallView } from '../../src/lib/bot-wall-view.ts';
import { barChart, columnChart, niceCeil } from '../../src/lib/charts.ts';

const NOW = new Date('2026-11-22T18:30:00Z');
const hour = (h: number) => new Date(Date.UTC(2026, 10, 22, h)).toISOString();

/** Today's document shape: buckets only in species[].hourly, verification as a string or a split. */
const todayDoc = {
  farm: 'Farm',
  generatedAt: NOW.toISOString(),
  meters: { fisher_hits: 2 },
  botTraffic: {
    windowStartedAt: '2026-11-20T00:00:00Z',
    families: [
      {
        family: 'Slow',
        requests: 5,
        firstSeen: hour(1),
        lastSeen: hour(2),
        topPaths: [{ path: '/a', requests: 5 }],
        statusCounts: { '2xx': 5 },
        verification: 'not verifiable',
      },
      {
        family: 'Busy',
        requests: 9,
        firstSeen: hour(10),
        lastSeen: hour(18),
        topPaths: [],
        statusCounts: { '2xx': 8, '4xx': 1 },
        verification: { verified: 2, unverified: 1 },
      },
    ],
  },
  species: [
    {
      species: 'Busy',
      intelligence_class: 'Crawler',
      hourly: { [hour(17)]: 4, [hour(18)]: 5 },
      robots: { fetches: 1, disallowed_hits: 0 },
      funnel: { presence: 9, convert_reads: 0, oaths: 0, messages: 0 },
      verification: { verified: 2, unverified: 1 },
    },
    {
      species: 'Slow',
      intelligence_class: 'Eater',
      hourly: { [hour(1)]: 2, [hour(2)]: 3 },
      robots: { fetches: 0, disallowed_hits: 3 },
    },
  ],
};

describe('toWallView', () => {
  it('sorts families by requests in the range and makes the meter the sum of the chart', () => {
    const last = toWallView(todayDoc, '1h', NOW);
    expect(last.families.map((f) => [f.family, f.requests])).toEqual([
      ['Busy', 9],
      ['Slow', 0],
    ]);
    expect(last.series.map((s) => s.requests)).toEqual([4, 5]);
    const day = toWallView(todayDoc, '24h', NOW);
    expect(day.series).toHaveLength(25);
    expect(day.totals.requests).toBe(day.series.reduce((n, s) => n + s.requests, 0));
    expect(day.totals.requests).toBe(14);
    expect(day.families.map((f) => f.family)).toEqual(['Busy', 'Slow']);
  });

  it('folds hourly buckets into days when the document has no daily ones', () => {
    const week = toWallView(todayDoc, '7d', NOW);
    expect(week.bucket).toBe('day');
    expect(week.series).toHaveLength(8);
    expect(week.series.at(-1)).toMatchObject({ start: '2026-11-22T00:00:00.000Z', requests: 14 });
    expect(week.folded).toBe(true);
    expect(renderCharts(week)).toContain('hourly buckets only');
  });

  it('reads the richer shape: hourly and daily lists, verification method, robots fields', () => {
    const doc = {
      botTraffic: {
        families: [
          {
            family: 'Newbot',
            requests: 7,
            class: 'Intelligence',
            operator: 'Example Inc.',
            robotsTxtFetches: 2,
            disallowedHits: 1,
            hourly: [{ hour: hour(18), requests: 7 }],
            daily: [
              { day: '2026-11-22', requests: 7 },
              { day: '2026-11-10', requests: 100 },
            ],
            verification: { method: 'reverse-dns', verified: 5, failed: 1, unverifiable: 0 },
          },
          { family: 'Nobody', requests: 3, verification: { method: 'none', verified: 0, failed: 0, unverifiable: 3 } },
        ],
      },
    };
    const v = toWallView(doc, '7d', NOW);
    const [first, second] = v.families;
    expect(first).toMatchObject({
      family: 'Newbot',
      requests: 7,
      operator: 'Example Inc.',
      class: 'Intelligence',
      robotsTxtFetches: 2,
      disallowedHits: 1,
    });
    expect(first!.verification).toEqual({ method: 'reverse-dns', verified: 5, failed: 1, unverifiable: 0 });
    expect(familyItem(first!, v)).toContain(
      '83% verified</span> by reverse DNS with forward confirmation (5 of 6, <span class="warn">1 failed</span>)',
    );
    // Outside the 8 days: not counted.
    expect(v.totals.requests).toBe(7);
    expect(second!.verification.method).toBe('none');
    expect(familyItem(second!, v)).toContain('cannot be verified');
    // Request by request: its one failed verification is a spoofed request of its name, shown as Cosplay beside the rest.
    expect(v.classes.find((c) => c.class === 'Intelligence')!.families).toEqual([{ family: 'Newbot', requests: 6 }]);
    expect(v.classes.find((c) => c.class === 'Cosplay')!.families).toEqual([{ family: 'Newbot', requests: 1 }]);
  });

  it('says "cannot be verified" for a family that cannot be, and leaves no cell empty', () => {
    const v = toWallView(todayDoc, '24h', NOW);
    const slow = v.families.find((f) => f.family === 'Slow')!;
    expect(slow.verification).toEqual({ method: 'none', verified: 0, failed: 0, unverifiable: 5 });
    const html = familyItem(slow, v);
    expect(html).toContain('cannot be verified');
    expect(html).not.toMatch(/<dd><\/dd>|<td[^>]*><\/td>/);
    expect(renderMeters(v)).toContain('5');
  });

  it("names a class's busiest families on its card and counts the rest; the Families list names every one", () => {
    const families = Array.from({ length: 25 }, (_, i) => ({
      family: `Crawler${i}`,
      class: 'Crawler',
      requests: 100 - i,
    }));
    const v = toWallView({ botTraffic: { families } }, '24h', NOW);
    const card = renderClasses(v).match(/<li data-class="Crawler"[^]*?<\/ul>[^]*?<\/li>/)![0];
    const named = [...card.matchAll(/<li>(Crawler\d+): \d+<\/li>/g)].map((m) => m[1]);
    expect(named).toEqual(families.slice(0, CLASS_CARD_FAMILIES).map((f) => f.family));
    expect(card).toContain(`and ${25 - CLASS_CARD_FAMILIES} more families`);
    expect(card).toContain('data-families="25"');
    expect(renderFamilies(v).match(/data-family="Crawler\d+"/g)).toHaveLength(25);
    // Spoofed requests are Cosplay's, ordered by their own count, not by their families' totals.
    const spoofed = toWallView(
      {
        botTraffic: {
          families: [
            { family: 'Big', class: 'Crawler', requests: 100, verification: { verified: 90, failed: 10 } },
            { family: 'Faked', class: 'Crawler', requests: 50, verification: { verified: 0, failed: 50 } },
          ],
        },
      },
      '24h',
      NOW,
    );
    expect(spoofed.classes.find((c) => c.class === 'Cosplay')!.families.map((f) => f.family)).toEqual(['Faked', 'Big']);
    // A class within the bound names all of its families, and no "more" line.
    const few = renderClasses(toWallView({ botTraffic: { families: families.slice(0, 3) } }, '24h', NOW));
    expect(few).not.toContain('more famil');
    expect([...few.matchAll(/<li>Crawler\d+: /g)]).toHaveLength(3);
  });

  it('degrades to totals, not an error, when a document has no buckets or is empty', () => {
    const v = toWallView({ botTraffic: { families: [{ family: 'X', requests: 4 }] } }, '24h', NOW);
    expect(v.bucketed).toBe(false);
    expect(v.families[0]!.requests).toBe(4);
    expect(renderCharts(v)).toContain('no time buckets');
    expect(toWallView(null, '1h', NOW).families).toEqual([]);
  });
});

describe('rangeBuckets', () => {
  it('covers the buckets that overlap the range, oldest first', () => {
    expect(rangeBuckets('1h', NOW).starts.map((t) => new Date(t).toISOString().slice(11, 13))).toEqual(['17', '18']);
    expect(rangeBuckets('7d', NOW).starts).toHaveLength(8);
  });
});

describe('charts', () => {
  it('end the axis on a round number and escape every label', () => {
    expect([0, 1, 3, 10, 11, 492].map(niceCeil)).toEqual([1, 1, 5, 10, 20, 500]);
    const svg = barChart('x', 'T', [{ label: '<script>alert(1)</script>', value: 2 }], 'requests');
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&lt;script&gt;');
    const cols = columnChart(
      'c',
      'T',
      [
        { label: 'a', value: 492 },
        { label: 'b', value: 3 },
      ],
      'requests',
    );
    expect(cols).toContain('highest 492');
    expect(cols).toContain('>500</text>');
    expect(cols).not.toContain('style=');
  });
});
