import { describe, expect, it } from 'vitest';
import {
  addressesInHtml,
  addressesInJson,
  addressesInText,
  parseRangeBody,
  prefixesOf,
  refreshRanges,
} from '../../api/telemetry/verification/ip-ranges.ts';

const FILE = `# kept comment
updated: "2020-01-01"
lists:
  google:
    families: [Googlebot]
    sources:
      - { url: "https://example.org/common-crawlers.json", format: google-json }
      - { url: "https://example.org/special-crawlers.json", format: google-json }
    prefixes: []
  gptbot:
    families: [GPTBot]
    sources:
      - { url: "https://example.org/missing.json", format: google-json }
    prefixes: [20.0.0.0/24]
  meta:
    families: [facebookexternalhit]
    sources: []
    snapshot: mirror
    prefixes: [31.13.24.0/21]
`;

// Bodies in the operators' own formats.
const GOOGLE = JSON.stringify({
  creationTime: '2026-08-22T00:00:00',
  prefixes: [{ ipv4Prefix: '66.249.64.0/27' }, { ipv6Prefix: '2001:4860:4801:10::/64' }],
});
const AHREFS = JSON.stringify({ ips: [{ ip_address: '5.39.1.224' }, { ip_address: '5.39.1.225' }], note: 'not 1.2.3' });
const TELEGRAM = '91.108.56.0/22\n91.108.4.0/22\n2001:b28:f23d::/48\n';
const PINGDOM = '103.47.211.210\r\n108.181.70.3\r\n\r\n';
const DUCKDUCKGO = '<h1>DuckDuckBot</h1><ul><li>20.191.45.212</li><li>40.88.21.235</li><li>version 1.1.0</li></ul>';

describe('reading published address lists', () => {
  it("reads each operator's format", () => {
    expect(prefixesOf(JSON.parse(GOOGLE))).toEqual(['66.249.64.0/27', '2001:4860:4801:10::/64']);
    expect(addressesInJson(JSON.parse(AHREFS))).toEqual(['5.39.1.224', '5.39.1.225']);
    expect(addressesInText(TELEGRAM)).toEqual(['91.108.56.0/22', '91.108.4.0/22', '2001:b28:f23d::/48']);
    expect(addressesInText(PINGDOM)).toEqual(['103.47.211.210', '108.181.70.3']);
    expect(addressesInHtml(DUCKDUCKGO)).toEqual(['20.191.45.212', '40.88.21.235']);
  });

  it('refuses an answer that holds no addresses or something else', () => {
    expect(() => prefixesOf({ ranges: [] })).toThrow(/prefixes/);
    expect(() => parseRangeBody('text', '<html>Service unavailable</html>')).toThrow(/not an address/);
    expect(() => parseRangeBody('html-addresses', '<p>moved</p>')).toThrow(/no addresses/);
    expect(() => parseRangeBody('json-addresses', '{"ips":[]}')).toThrow(/no addresses/);
  });
});

describe('refreshing the shipped lists', () => {
  it("takes the union of a list's sources, keeps comments and a failing list as it was, leaves a list without sources alone", async () => {
    const answers: Record<string, string> = {
      'https://example.org/common-crawlers.json': GOOGLE,
      'https://example.org/special-crawlers.json': JSON.stringify({ prefixes: [{ ipv4Prefix: '66.249.90.0/24' }] }),
    };
    const fetchText = async (url: string) => {
      if (!(url in answers)) throw new Error('could not fetch (ENOTFOUND)');
      return answers[url]!;
    };
    const { text, report } = await refreshRanges(FILE, fetchText, '2026-11-22');
    expect(text).toContain('# kept comment');
    expect(text).toMatch(/66\.249\.64\.0\/27/);
    expect(text).toMatch(/66\.249\.90\.0\/24/);
    expect(text).toMatch(/20\.0\.0\.0\/24/);
    expect(text).toMatch(/31\.13\.24\.0\/21/);
    expect(text).toMatch(/updated: "?2026-11-22/);
    expect(report).toEqual([
      { list: 'google', prefixes: 3 },
      { list: 'gptbot', error: expect.stringMatching(/kept the old prefixes.*missing\.json.*ENOTFOUND/) },
    ]);
  });

  it('fails cleanly when the network is closed: every list reported, nothing changed', async () => {
    const { text, report } = await refreshRanges(
      FILE,
      async () => Promise.reject(new Error('could not fetch (ENOTFOUND)')),
      '2026-11-22',
    );
    expect(report.every((r) => r.error)).toBe(true);
    expect(text).toMatch(/updated: "?2020-01-01/);
  });

  it('refuses an answer that is not a list of prefixes', async () => {
    await expect(
      refreshRanges(FILE, async () => JSON.stringify({ prefixes: [{ ipv4Prefix: 'not a prefix' }] }), '2026-11-22'),
    ).rejects.toThrow();
  });
});
