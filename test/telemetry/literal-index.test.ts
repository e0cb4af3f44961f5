import { list } from 'isbot';
import { describe, expect, it } from 'vitest';
import { fixtureAgentsAsReceived } from '../helpers/fixture-agents.ts';
import {
  closing,
  indexedAlternation,
  leadingLiteral,
  requiredLiteral,
  topLevelBranches,
} from '../../api/telemetry/classification/literal-index.ts';

const userAgents = fixtureAgentsAsReceived;

/** The same answers as the plain alternation, on every string given. */
function expectSameAnswers(patterns: string[], strings: string[]) {
  const indexed = indexedAlternation(patterns);
  const plain = new RegExp(patterns.join('|'), 'i');
  expect(strings.filter((s) => indexed(s) !== plain.test(s))).toEqual([]);
  // Both answers occur: the comparison is not one of two constants.
  expect(strings.some((s) => plain.test(s))).toBe(true);
  expect(strings.some((s) => !plain.test(s))).toBe(true);
}

/** Each pattern's own literals written into strings: at the start, inside, last, in capitals, cut short, behind what a lookbehind refuses. */
function probes(patterns: string[]): string[] {
  const texts = patterns.flatMap((p) => [leadingLiteral(p), requiredLiteral(p).literal]).filter((t) => t !== '');
  return texts.flatMap((t) => [
    t,
    `x${t}`,
    `Mozilla/5.0 (X11) ${t}/1.2 (+http://example.org)`,
    `${t.toUpperCase()} 1.0;`,
    `a ${t}`,
    t.slice(0, -1),
    `cam${t}`,
    `lib${t}`,
    ` cu${t}s_`,
    `google/${t}`,
    // Past ASCII: /i folds neither the Kelvin sign into k nor a long s into s, though toLowerCase does the first.
    t.replace(/k/g, '\u212a').replace(/s/g, '\u017f'),
    `İ${t}`,
  ]);
}

describe("a pattern's groups and branches", () => {
  it('splits at the | outside groups, classes and escapes, and finds where a group closes', () => {
    expect(topLevelBranches('FBAV|Facebook/')).toEqual(['FBAV', 'Facebook/']);
    expect(topLevelBranches('a(?:b|c)|[|(]d|e\\|f')).toEqual(['a(?:b|c)', '[|(]d', 'e\\|f']);
    expect(topLevelBranches('one')).toEqual(['one']);
    expect(closing('(?:a|(b)|[)])x', 0)).toBe(12);
    expect(closing('(?:unclosed', 0)).toBe(11);
  });
});

describe('the literal a pattern starts with', () => {
  it('skips what tests the text around the start, and stops before what is not one character', () => {
    expect(leadingLiteral('crawl')).toBe('crawl');
    expect(leadingLiteral('(?<!cam)scan')).toBe('scan');
    expect(leadingLiteral('\\bperl\\b')).toBe('perl');
    expect(leadingLiteral(' daum[ /]')).toBe(' daum');
    expect(leadingLiteral('mail\\.ru/')).toBe('mail.ru/');
    expect(leadingLiteral('bots?(?:\\b|_)')).toBe('bot');
    expect(leadingLiteral('java(?!;)')).toBe('java');
    expect(leadingLiteral('Ab{2}c')).toBe('a');
    expect(leadingLiteral('\\w+/1\\.0;')).toBe('');
    expect(leadingLiteral('(?:^|[^g])news')).toBe('');
    // A top-level | gives two starts.
    expect(leadingLiteral('abc|def')).toBe('');
  });
});

describe('the literal every match holds', () => {
  it('is the longest run outside groups and classes, less what a quantifier makes optional', () => {
    expect(requiredLiteral('(?:^|[^g])news(?!sapphire)')).toEqual({ literal: 'news', atEnd: false });
    expect(requiredLiteral('\\b\\w+/1\\.0;')).toEqual({ literal: '/1.0;', atEnd: false });
    expect(requiredLiteral('@[a-z][\\w-]+\\.')).toEqual({ literal: '@', atEnd: false });
    expect(requiredLiteral('ab{0,2}cd')).toEqual({ literal: 'cd', atEnd: false });
    expect(requiredLiteral('x(?:y)?zz')).toEqual({ literal: 'zz', atEnd: false });
    expect(requiredLiteral('[a\\]b]cde')).toEqual({ literal: 'cde', atEnd: false });
    expect(requiredLiteral('abc|def')).toEqual({ literal: '', atEnd: false });
  });

  it('is the one before a final $ when there is one', () => {
    expect(requiredLiteral(';\\s\\w+;$')).toEqual({ literal: ';', atEnd: true });
    expect(requiredLiteral('Foo$')).toEqual({ literal: 'foo', atEnd: true });
  });
});

describe('an indexed alternation', () => {
  it("answers as isbot's unanchored patterns do in one RegExp, on every User-Agent of the fixtures", () => {
    const unanchored = list.filter((p) => !p.startsWith('^'));
    expect(unanchored.length).toBeGreaterThan(100);
    expectSameAnswers(unanchored, userAgents);
  });

  it("answers as one RegExp on each of isbot's patterns' own literals, wherever they are written", () => {
    const unanchored = list.filter((p) => !p.startsWith('^'));
    expectSameAnswers(unanchored, probes(unanchored));
    // One pattern at a time: a pattern whose trigram or literal is missed is not hidden by another's match.
    for (const p of unanchored) {
      const indexed = indexedAlternation([p]);
      const plain = new RegExp(p, 'i');
      expect(probes([p]).filter((s) => indexed(s) !== plain.test(s))).toEqual([]);
    }
  });

  it('answers as one RegExp for patterns of every kind it sorts: a literal first, a literal inside, punctuation, none', () => {
    const patterns = ['abc(?=d)', '(?<=x)yz', '\\w+@example', '(?:a|b)c!', ';\\d+;$', 'q+', '[0-9]{3}-go', 'end$'];
    const strings = [
      'abcd',
      'abce',
      'xyz',
      'yz',
      'me@EXAMPLE',
      'ac!',
      'bc',
      ';12;',
      ';12; ',
      'qq',
      'Q',
      '123-GO',
      '12-go',
      'the END',
      'end.',
      '',
    ];
    expectSameAnswers(patterns, strings);
  });

  it('looks for a punctuation literal only where its first character occurs, and for every one past the table of first characters', () => {
    // 30 punctuation-led patterns (more first characters than the scan notes), some sharing one.
    const marks = '!"#$%&\'()*+,-./:;<=>?@[]^_`{|}~';
    const patterns = [...marks].map((c, k) => `\\${c}${k % 2 === 0 ? '\\d' : '[a-z]'}`);
    patterns.push('\\$\\{x', '\\.\\.\\/');
    const strings = [...marks].flatMap((c) => [`a${c}1`, `a${c}b`, `${c}`, `${c.repeat(2)}/`, `Mozilla/5.0 ${c}Q`]);
    expectSameAnswers(patterns, [...strings, '${x', '${y', '../', './', 'Mozilla/5.0 (X11; Linux x86_64)']);
  });

  it('reads no literal past ASCII, where /i folds case otherwise than the index', () => {
    expect(leadingLiteral('pódcast')).toBe('p');
    expectSameAnswers(
      ['pódcast', 'ſtop', 'x\u212a'],
      ['PÓDCAST', 'pódcast', 'podcast', 'STOP', 'ſtop', 'ſTOP', 'xk', 'x\u212a'],
    );
  });

  it('tries a pattern held further in once however often its literal occurs, and still finds it', () => {
    const patterns = ['(?:^|[^g])news(?!sapphire)'];
    const strings = ['gnews gnews gnews news', 'gnews '.repeat(50), 'newssapphire news', 'NEWS', 'gnews'];
    expectSameAnswers(patterns, strings);
  });
});
