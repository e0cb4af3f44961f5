/**
 * A case-insensitive alternation of RegExp patterns, tried only where one of them can match.
 *
 * V8 tries every branch of an alternation at every position of the string: isbot's 128 unanchored
 * patterns cost ~1.3 µs on a browser's 120 characters, a third of classifying it. Most patterns
 * start with a literal ("crawl", "(?<!cam)scan", "\bperl"), so each such pattern is indexed by its
 * literal's first three characters; one scan of the string's character codes finds where such a
 * trigram occurs, and only its patterns are tried there, as a sticky RegExp. A pattern with no
 * literal first is tried on the whole string only if the string holds a literal every match of it
 * holds ("news" of "(?:^|[^g])news", "/1.0;" of "\b\w+/1\.0;"); the rest make one RegExp tried as
 * usual. The answers are new RegExp(patterns.join('|'), 'i').test's (test/telemetry/literal-index.test.ts).
 */

/**
 * The index of the first character from `from` on, outside classes and escapes, for which `stop`
 * holds given the group depth after it (a `(` counts in, a `)` out); -1 when none does.
 */
function scan(pattern: string, from: number, stop: (ch: string, depth: number) => boolean): number {
  let depth = 0;
  let inClass = false;
  for (let i = from; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\') i++;
    else if (inClass) inClass = ch !== ']';
    else if (ch === '[') inClass = true;
    else {
      if (ch === '(') depth++;
      else if (ch === ')') depth--;
      if (stop(ch, depth)) return i;
    }
  }
  return -1;
}

const topLevelBar = (ch: string, depth: number) => ch === '|' && depth === 0;

/** Whether a pattern has a `|` outside groups and classes (then its first branch's literal is not every match's). */
export const topLevelAlternation = (pattern: string): boolean => scan(pattern, 0, topLevelBar) >= 0;

/** A pattern's branches: its text between the `|`s outside groups and classes. */
export function topLevelBranches(pattern: string): string[] {
  const branches: string[] = [];
  let start = 0;
  for (let bar = scan(pattern, 0, topLevelBar); bar >= 0; bar = scan(pattern, start, topLevelBar)) {
    branches.push(pattern.slice(start, bar));
    start = bar + 1;
  }
  branches.push(pattern.slice(start));
  return branches;
}

/** Where the group opening at `open` closes (the pattern's length when it does not). */
export function closing(pattern: string, open: number): number {
  const at = scan(pattern, open, (ch, depth) => ch === ')' && depth === 0);
  return at < 0 ? pattern.length : at;
}

const SPECIAL = new Set('[](){}|?*+.^$');
const QUANTIFIER = new Set('?*+{');
const WORD_ESCAPE = /[A-Za-z0-9]/;

/**
 * The literal text every match of a pattern starts with, lowercase ASCII ("" when none): a
 * lookbehind or \b before it is skipped, as it tests the text around the start, not at it; the
 * literal ends before a class, a group, an escape such as \d, any other operator, and before a
 * quantified character.
 */
export function leadingLiteral(pattern: string): string {
  if (topLevelAlternation(pattern)) return '';
  let i = 0;
  for (;;) {
    if (pattern.startsWith('\\b', i)) i += 2;
    else if (pattern.startsWith('(?<!', i) || pattern.startsWith('(?<=', i)) i = closing(pattern, i) + 1;
    else break;
  }
  let literal = '';
  while (i < pattern.length) {
    let ch = pattern[i]!;
    if (ch === '\\') {
      const escaped = pattern[i + 1];
      if (escaped === undefined || WORD_ESCAPE.test(escaped)) break;
      ch = escaped;
      i += 2;
    } else if (SPECIAL.has(ch)) break;
    else i++;
    // Past ASCII, /i's case folding is not toLowerCase's.
    if (ch.charCodeAt(0) >= 127 || QUANTIFIER.has(pattern[i] ?? '')) break;
    literal += ch.toLowerCase();
  }
  return literal;
}

/**
 * The longest literal every match of a pattern holds, lowercase ASCII: the text outside groups and
 * classes, less what a quantifier makes optional ("" when there is none). A literal right before a
 * final `$` is returned instead, with atEnd: a match then ends the string with it (`;\s\w+;$`).
 */
export function requiredLiteral(pattern: string): { literal: string; atEnd: boolean } {
  if (topLevelAlternation(pattern)) return { literal: '', atEnd: false };
  let best = '';
  let run = '';
  const end = () => {
    if (run.length > best.length) best = run;
    run = '';
  };
  for (let i = 0; i < pattern.length;) {
    let ch = pattern[i]!;
    if (ch === '$' && i === pattern.length - 1 && run !== '') return { literal: run, atEnd: true };
    if (ch === '(') {
      end();
      i = closing(pattern, i) + 1;
      continue;
    }
    if (ch === '[' || ch === '{') {
      end();
      const close = ch === '[' ? ']' : '}';
      for (i++; i < pattern.length && pattern[i] !== close; i++) if (pattern[i] === '\\') i++;
      i++;
      continue;
    }
    if (SPECIAL.has(ch) || (ch === '\\' && WORD_ESCAPE.test(pattern[i + 1] ?? 'a'))) {
      end();
      i += ch === '\\' ? 2 : 1;
      continue;
    }
    if (ch === '\\') ch = pattern[++i]!;
    const next = pattern[++i] ?? '';
    if (ch.charCodeAt(0) >= 127 || next === '?' || next === '*' || next === '{') end();
    else {
      run += ch.toLowerCase();
      if (next === '+') end();
    }
  }
  end();
  return { literal: best, atEnd: false };
}

/** A character code folded as the index reads it: ASCII letters lowercase, and everything past ASCII one code no literal holds. */
const FOLD = new Uint8Array(256).map((_, c) => (c >= 65 && c <= 90 ? c + 32 : c < 127 ? c : 127));
const trigram = (a: number, b: number, c: number) => (a << 14) | (b << 7) | c;
/** A 64 KB filter in front of the trigram map: one multiply and one byte per position, a Map lookup only on a hit. */
const FILTER_BITS = 16;
const slot = (code: number) => Math.imul(code, 0x9e3779b1) >>> (32 - FILTER_BITS);

const LETTER = /[a-z]/;

/** Patterns that hold a literal further in are tried once a call, after the scan: one bit each of a call's mask. */
const MAX_HOLDING = 31;

/** A tester with new RegExp(patterns.join('|'), 'i').test's answers. */
export function indexedAlternation(patterns: readonly string[]): (s: string) => boolean {
  const starting = new Map<number, string[]>();
  const holding: { code: number; re: RegExp }[] = [];
  // Patterns whose only literal is punctuation ("\|", "\b\w+/1\.0;"), by that literal (and whether
  // it ends the string): tried where the string holds it.
  const byNeedle = new Map<string, string[]>();
  const always: string[] = [];
  const codeOf = (literal: string) => trigram(literal.charCodeAt(0), literal.charCodeAt(1), literal.charCodeAt(2));
  for (const p of patterns) {
    const leading = leadingLiteral(p);
    if (leading.length >= 3) {
      const code = codeOf(leading);
      starting.set(code, [...(starting.get(code) ?? []), p]);
      continue;
    }
    const { literal, atEnd } = requiredLiteral(p);
    if (literal !== '' && !LETTER.test(literal)) {
      const key = `${atEnd ? '$' : ' '}${literal}`;
      byNeedle.set(key, [...(byNeedle.get(key) ?? []), p]);
    } else if (literal.length >= 3 && !atEnd && holding.length < MAX_HOLDING)
      holding.push({ code: codeOf(literal), re: new RegExp(p, 'i') });
    else always.push(p);
  }
  // By trigram: the patterns that start with it, as one sticky RegExp, and the bits of the patterns that hold it.
  const byTrigram = new Map<number, { sticky: RegExp | null; holds: number }>();
  for (const [code, group] of starting) byTrigram.set(code, { sticky: new RegExp(group.join('|'), 'iy'), holds: 0 });
  holding.forEach(({ code }, bit) => {
    const entry = byTrigram.get(code) ?? { sticky: null, holds: 0 };
    entry.holds |= 1 << bit;
    byTrigram.set(code, entry);
  });
  const filter = new Uint8Array(1 << FILTER_BITS);
  for (const code of byTrigram.keys()) filter[slot(code)] = 1;
  const rest = always.length > 0 ? new RegExp(always.join('|'), 'i') : null;
  // Each needle's first character gets a bit above the folded code in this index's own table, so
  // the scan notes which occur at no cost of its own, and a needle whose first character never did
  // is not looked for (a browser's string holds no $ ' " < { | =). Past 24 characters a needle gets
  // no bit and is always looked for.
  const table = Int32Array.from(FOLD);
  let bits = 0;
  const needles = [...byNeedle].map(([key, group]) => {
    const needle = key.slice(1);
    const first = needle.charCodeAt(0);
    if (first < 128 && table[first]! < 128 && bits < 24) table[first]! |= 1 << (7 + bits++);
    return { needle, atEnd: key[0] === '$', bit: table[first]! & ~127, re: new RegExp(group.join('|'), 'i') };
  });

  return (s: string): boolean => {
    const n = s.length;
    let code = 0;
    let held = 0;
    let seen = 0;
    for (let i = 0; i < n; i++) {
      const ch = s.charCodeAt(i);
      const folded = ch < 256 ? table[ch]! : 127;
      seen |= folded;
      code = ((code << 7) | (folded & 127)) & 0x1fffff;
      if (i < 2 || filter[slot(code)] === 0) continue;
      const hit = byTrigram.get(code);
      if (hit === undefined) continue;
      held |= hit.holds;
      if (hit.sticky !== null) {
        hit.sticky.lastIndex = i - 2;
        if (hit.sticky.test(s)) return true;
      }
    }
    for (let bit = 0; held !== 0; bit++, held >>>= 1) if ((held & 1) !== 0 && holding[bit]!.re.test(s)) return true;
    for (const { needle, atEnd, bit, re } of needles)
      if ((bit === 0 || (seen & bit) !== 0) && (atEnd ? s.endsWith(needle) : s.includes(needle)) && re.test(s))
        return true;
    return rest !== null && rest.test(s);
  };
}
