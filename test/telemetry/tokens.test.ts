import { describe, expect, it } from 'vitest';
import {
  lowerTokens,
  productTokens,
  tokenCut,
  tokenHash,
  tokenHashAt,
  tokenScan,
} from '../../api/telemetry/classification/tokens.ts';
import { fixtureAgents, scannedTokens } from '../helpers/fixture-agents.ts';

// The product tokens of a User-Agent, as the classifier reads them: split at whitespace and
// ; ( ) , [ ] { } " ' < > |, the version after a slash left out, tokens starting with + dropped.
const userAgents = fixtureAgents;

/** The same rule written as a RegExp split, the definition the scan must keep. */
const bySplit = (ua: string) =>
  ua
    .toLowerCase()
    .split(/[\s;(),[\]{}"'<>|]+/)
    .filter((part) => part !== '' && !part.startsWith('+') && !part.startsWith('/'))
    .map((part) => part.split('/')[0]!);

describe('product tokens', () => {
  it('splits, drops versions and addresses', () => {
    const ua = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot) Xenu Link Sleuth/1.3.8';
    expect(productTokens(ua)).toEqual({
      original: ['Mozilla', 'compatible', 'GPTBot', 'Xenu', 'Link', 'Sleuth'],
      lower: ['mozilla', 'compatible', 'gptbot', 'xenu', 'link', 'sleuth'],
      starts: [0, 13, 25, 65, 70, 75],
    });
    expect(lowerTokens(ua)).toEqual(productTokens(ua).lower);
  });

  it('splits at every character RegExp \\s matches, in Latin-1 and beyond', () => {
    const ua = 'A\u00a0B\u000bC\u000cD\u2003E\u3000F\ufeffG\u0085H\tI';
    // U+0085 is no whitespace to \s: H stays joined to it.
    expect(lowerTokens(ua)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g\u0085h', 'i']);
    expect(productTokens(ua).lower).toEqual(lowerTokens(ua));
  });

  it('gives what the RegExp split gives on every User-Agent of the fixtures', () => {
    expect(userAgents.length).toBeGreaterThan(10_000);
    const differ = userAgents.filter((ua) => JSON.stringify(lowerTokens(ua)) !== JSON.stringify(bySplit(ua)));
    expect(differ).toEqual([]);
    const odd = ['/1.0 x', '+a b+', ' ; ', '', 'a//b c/', 'x/(y) z', '"q"|r<s>'];
    for (const ua of odd) {
      expect(lowerTokens(ua)).toEqual(bySplit(ua));
      expect(productTokens(ua).lower).toEqual(bySplit(ua));
    }
  });

  it("reads each token's hash and last cut in the same scan", () => {
    const differ: string[] = [];
    let checked = 0;
    for (const { text, tokens, i, start, end } of scannedTokens(userAgents)) {
      checked++;
      const token = text.slice(start, end);
      // The last - _ or . past the token's second character, where a name's suffix may start.
      const cut = Math.max(...[...token].map((ch, k) => ('-_.'.includes(ch) && k > 1 ? start + k : -1)));
      if (tokenHashAt(tokens, i) !== tokenHash(text, start, end) || tokenCut(tokens, i) !== cut) differ.push(token);
    }
    expect(differ).toEqual([]);
    expect(checked).toBeGreaterThan(userAgents.length);
    expect(tokenCut(tokenScan('adsbot-google-mobile x-y'), 0)).toBe(13);
    expect(tokenCut(tokenScan('adsbot-google-mobile x-y'), 1)).toBe(-1);
  });

  it("splits a string as written at its lowercase's scan wherever the two have one length", () => {
    const same = userAgents.filter((ua) => ua.toLowerCase().length === ua.length);
    expect(
      same.filter(
        (ua) => JSON.stringify(productTokens(ua, tokenScan(ua.toLowerCase()))) !== JSON.stringify(productTokens(ua)),
      ),
    ).toEqual([]);
    // Two lengths: U+0130 lowercases to two characters, and the scans' places part.
    const dotted = 'İİ Foo/1.0 BarBot';
    expect(dotted.toLowerCase().length).not.toBe(dotted.length);
    expect(productTokens(dotted).lower).toEqual(['i̇i̇', 'foo', 'barbot']);
  });
});
