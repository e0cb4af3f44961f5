import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusedInName, refusedInText } from '../../api/names/characters.ts';
import { isWallName, nameKeys, nameProblem, sameKeys, skeleton } from '../../api/names/name-rule.ts';
import { mixedScript } from '../../api/names/scripts.ts';

const alike = (a: string, b: string) => sameKeys(nameKeys(a), nameKeys(b));

describe('characters a name may not hold (Unicode properties)', () => {
  it.each([
    ['\u00AD', 'format'],
    ['\u034F', 'default-ignorable'],
    ['\u2061', 'format'],
    ['\u2062', 'format'],
    ['\u2064', 'format'],
    ['\u180E', 'format'],
    ['\u3164', 'default-ignorable'],
    ['\uFFA0', 'default-ignorable'],
    ['\u115F', 'default-ignorable'],
    ['\u17B4', 'default-ignorable'],
    ['\u206A', 'format'],
    ['\uFE0F', 'variation selector'],
    ['\u{E0061}', 'tag'],
    ['\u{1D173}', 'format'],
    ['\u202E', 'bidirectional'],
    ['\u200B', 'zero-width'],
    ['\uFEFF', 'byte order mark'],
    ['\u0007', 'control'],
    ['\u0085', 'control'],
    ['\t', 'control'],
    ['\uE000', 'private-use'],
    ['\u{F0000}', 'private-use'],
    ['\u0378', 'unassigned'],
    ['\uD800', 'surrogate'],
  ])('refuses %j as %s, naming its code point', (c, kind) => {
    const found = refusedInName(`ab${c}cd`);
    expect(found?.codePoint).toBe(`U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
    expect(found?.why).toContain(kind);
  });

  it('welcomes letters, marks, digits, punctuation, spaces and emoji of every script', () => {
    for (const name of ['agent-42', 'José', 'Ren\u0065\u0301', 'Иван', 'مرحبا 🤖', '東京', 'नमस्ते', 'a.b_c (d)'])
      expect(refusedInName(name), name).toBeNull();
  });

  it('lets long texts hold tabs, line breaks and an emoji drawn as emoji, but nothing else invisible', () => {
    expect(refusedInText('line one\nline two\r\n\ttabbed ❤️ ⚠️ 1️⃣')).toBeNull();
    expect(refusedInText('smuggled\u{E0068}\u{E0069}')?.codePoint).toBe('U+E0068');
    expect(refusedInText('a\uFE0Fb')?.codePoint).toBe('U+FE0F');
    expect(refusedInText('❤\uFE0F\uFE0F')?.codePoint).toBe('U+FE0F');
    expect(refusedInText('soft\u00ADhyphen')?.codePoint).toBe('U+00AD');
    expect(refusedInText('bell\u0007')?.codePoint).toBe('U+0007');
    // Private-use and unassigned characters show as a glyph or a box: a long text may hold them.
    expect(refusedInText('\uE000 \u0378')).toBeNull();
  });
});

describe('how a name is put together', () => {
  it('refuses a combining mark with no letter under it, a fifth mark on one letter, and one mark twice', () => {
    expect(nameProblem('\u0301abc')).toContain('U+0301');
    expect(nameProblem('ab \u0301cd')).toContain('no letter to sit on');
    expect(nameProblem('a\u0300\u0301\u0302\u0303\u0304')).toContain('U+0304');
    expect(nameProblem('a\u0300\u0301\u0302\u0303')).toBeNull();
    expect(nameProblem('e\u0301\u0301')).toContain('twice');
  });

  it.each([
    ['Latin', 'example-agent'],
    ['Cyrillic', 'Иван Петров'],
    ['Greek', 'Σωκράτης'],
    ['Cherokee alone', 'ᏣᎳᎩ'],
    ['Latin + Han + kana', 'Agent 東京エージェント'],
    ['Latin + Hangul + Han', 'Agent 한국 韓國'],
    ['Latin + Han + Bopomofo', 'Agent ㄅㄆ 中'],
    ['Latin + Arabic', 'bot مرحبا'],
    ['Latin + Devanagari', 'agent नमस्ते'],
    ['Japanese prolonged sound mark (Hiragana or Katakana)', 'ラーメン'],
    ['digits and emoji', '42 🤖'],
  ])('allows %s', (_label, name) => {
    expect(nameProblem(name)).toBeNull();
  });

  it.each([
    ['Latin + Cyrillic', 'w\u0430ll', 'U+0430'],
    ['Latin + Greek', 'agent-\u03B1', 'U+03B1'],
    ['Cyrillic + Greek', '\u0438\u03B1', 'U+03B1'],
    ['Arabic + Hebrew', 'مرحبا שלום', 'U+05E9'],
    ['Latin + Cherokee', 'Ꮃall', 'U+0061'],
    ['Latin + Arabic + Devanagari', 'a مرحبا न', 'U+0928'],
  ])('refuses %s, naming the first letter that mixes', (_label, name, code) => {
    expect(nameProblem(name)).toContain(code);
    expect(mixedScript(name)?.with.length).toBeGreaterThan(0);
  });
});

describe('name keys: UTS #39 skeletons of the case-folded NFKC form', () => {
  it('makes case, width and look-alike letters one name', () => {
    expect(alike('Night-Owl', 'NIGHT-OWL')).toBe(true);
    expect(alike('Night-Owl', '\uFF2E\uFF49\uFF47\uFF48\uFF54-\uFF2F\uFF57\uFF4C')).toBe(true);
    expect(alike('xopa', '\u0445\u043E\u0440\u0430')).toBe(true);
    expect(alike('paypal', 'p\u0430yp\u0430l')).toBe(true);
    expect(alike('madam', 'rnadam')).toBe(true);
    expect(alike('Straße', 'STRASSE')).toBe(true);
    expect(alike('my agent', 'my \u2003  agent')).toBe(true);
  });

  it('sees a capital I as the l it looks like, without making every i an l', () => {
    expect(alike('PayPal', 'PayPaI')).toBe(true);
    expect(alike('Ian', 'ian')).toBe(true);
    expect(alike('pit', 'plt')).toBe(false);
  });

  it('keeps different names apart', () => {
    for (const [a, b] of [
      ['night-owl', 'night-owls'],
      ['agent-1', 'agent-2'],
      ['José', 'Josè'],
      ['東京', '京都'],
      ['my-agent', 'my agent'],
    ] as const)
      expect(alike(a, b), `${a} ${b}`).toBe(false);
  });

  it('keys names stored before the rule too: invisible characters do not hide a twin', () => {
    expect(alike('wa\u00ADll', 'wall')).toBe(true);
    expect(alike('ev\u200Bil', 'evil')).toBe(true);
  });

  it('knows the wall and its look-alikes', () => {
    for (const name of ['wall', 'WALL', 'Wall', '\uFF57\uFF41\uFF4C\uFF4C', 'wa11', 'WAII', 'wa\u217C\u217C'])
      expect(isWallName(name), name).toBe(true);
    for (const name of ['walls', 'wail', 'mall']) expect(isWallName(name), name).toBe(false);
  });

  it('a skeleton is a fixed point, and keys ignore case for any text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        expect(skeleton(skeleton(s))).toBe(skeleton(s));
        expect(nameKeys(s.toUpperCase()).folded).toBe(nameKeys(s.toLowerCase()).folded);
      }),
    );
  });
});
