import { describe, expect, it } from 'vitest';
import { lowerTokens, productTokens } from '../../api/telemetry/classification/tokens.ts';
import { fixtureAgents } from '../helpers/fixture-agents.ts';

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
});
