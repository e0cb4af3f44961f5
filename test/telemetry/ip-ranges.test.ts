import { describe, expect, it } from 'vitest';
import { prefixesOf, refreshRanges } from '../../api/telemetry/ip-ranges.ts';

const FILE = `# kept comment
updated: "2020-01-01"
families:
  Googlebot:
    source: https://example.org/googlebot.json
    prefixes: []
  GPTBot:
    source: https://example.org/missing.json
    prefixes: [20.0.0.0/24]
`;

describe('refreshing published IP ranges', () => {
  it("reads the operators' JSON format", () => {
    expect(prefixesOf({ prefixes: [{ ipv4Prefix: '66.249.64.0/27' }, { ipv6Prefix: '2001:4860:4801:10::/64' }] })).toEqual(['66.249.64.0/27', '2001:4860:4801:10::/64']);
    expect(() => prefixesOf({ ranges: [] })).toThrow(/prefixes/);
  });

  it('rewrites prefixes and date, keeps comments, and keeps a failing source as it was', async () => {
    const answers: Record<string, unknown> = { 'https://example.org/googlebot.json': { creationTime: 'x', prefixes: [{ ipv4Prefix: '66.249.64.0/27' }] } };
    const fetchJson = async (url: string) => {
      if (!(url in answers)) throw new Error('HTTP 404');
      return answers[url];
    };
    const { text, report } = await refreshRanges(FILE, fetchJson, '2026-11-21');
    expect(text).toContain('# kept comment');
    expect(text).toMatch(/66\.249\.64\.0\/27/);
    expect(text).toMatch(/20\.0\.0\.0\/24/);
    expect(text).toMatch(/updated: "?2026-11-21/);
    expect(report).toEqual([{ family: 'Googlebot', prefixes: 1 }, { family: 'GPTBot', error: expect.stringMatching(/kept the old prefixes.*HTTP 404/) }]);
  });

  it('refuses an answer that is not a list of prefixes', async () => {
    await expect(refreshRanges(FILE, async () => ({ prefixes: [{ ipv4Prefix: 'not a prefix' }] }), '2026-11-21')).rejects.toThrow();
  });
});
