import properties from 'regenerate-unicode-properties';
import { remember } from '../memo.ts';

/**
 * Script mixing, as UTS #39 section 5.2 ("Restriction-Level Detection") defines it, at the level it
 * calls Moderately Restrictive: a name may be written in one script, in Latin with Han and the
 * Japanese kana, Bopomofo or Hangul, or in Latin with one other Recommended script other than
 * Cyrillic and Greek. Characters of Common and Inherited (digits, punctuation, spaces, emoji,
 * most combining marks) go with any script.
 *
 * The script names come from regenerate-unicode-properties (the Script_Extensions values of its
 * Unicode version); which characters each script holds, from the engine's own `\p{scx=…}`, so
 * scripts, categories and normalisation all read one Unicode version. A name the engine does not
 * know yet (a newer script) is skipped: its characters are unassigned to the engine, and refused
 * before scripts are read.
 */
const SCRIPTS: [string, RegExp][] = properties.get('Script_Extensions')!.flatMap((script) => {
  try {
    return [[script, new RegExp(`^\\p{scx=${script}}$`, 'u')] as [string, RegExp]];
  } catch {
    return [];
  }
});

/** UAX #31 table 5, Recommended Scripts: those in common modern use. */
const RECOMMENDED = new Set([
  'Arabic',
  'Armenian',
  'Bengali',
  'Bopomofo',
  'Cyrillic',
  'Devanagari',
  'Ethiopic',
  'Georgian',
  'Greek',
  'Gujarati',
  'Gurmukhi',
  'Han',
  'Hangul',
  'Hebrew',
  'Hiragana',
  'Kannada',
  'Katakana',
  'Khmer',
  'Lao',
  'Latin',
  'Malayalam',
  'Myanmar',
  'Oriya',
  'Sinhala',
  'Tamil',
  'Telugu',
  'Thaana',
  'Thai',
  'Tibetan',
]);
// Scripts whose letters look most like Latin ones: Latin may not be mixed with them (UTS #39 5.2).
const NOT_WITH_LATIN = new Set(['Cyrillic', 'Greek']);
// The writing systems that mix scripts by design (UTS #39 5.1, augmented script sets).
const AUGMENT: Record<string, string[]> = {
  Han: ['Hanb', 'Jpan', 'Kore'],
  Hiragana: ['Jpan'],
  Katakana: ['Jpan'],
  Hangul: ['Kore'],
  Bopomofo: ['Hanb'],
};
// A text is covered by a set of scripts when each of its characters is used with one of them.
const HIGHLY_RESTRICTIVE = [
  ['Latin', 'Han', 'Hiragana', 'Katakana'],
  ['Latin', 'Han', 'Bopomofo'],
  ['Latin', 'Han', 'Hangul'],
].map((s) => new Set(s));

// Reading a character's scripts tries every script (about 2 µs a character); names use few
// characters, so each is read once. The cache is bounded: past its size it starts again.
const known = new Map<string, Set<string> | null>();
const KNOWN_MAX = 4096;

/** The scripts a character is used with (its Script_Extensions); null for Common and Inherited, which go with any. */
export function scriptsOf(c: string): Set<string> | null {
  const cached = known.get(c);
  if (cached !== undefined) return cached;
  const found = new Set<string>();
  for (const [script, pattern] of SCRIPTS) if (pattern.test(c)) found.add(script);
  const scripts = found.has('Common') || found.has('Inherited') ? null : found;
  return remember(known, KNOWN_MAX, c, scripts);
}

const augmented = (scripts: Set<string>) => new Set([...scripts].flatMap((s) => [s, ...(AUGMENT[s] ?? [])]));
const meets = (a: Set<string>, b: Set<string>) => [...a].some((s) => b.has(s));

/**
 * The first character of `s` that mixes scripts the rule above does not allow with the ones
 * before it, and the scripts it mixes; null when the scripts are fine. Each level is followed
 * character by character (a level once broken stays broken), so a name is read once.
 */
export function mixedScript(s: string): { char: string; scripts: string[]; with: string[] } | null {
  const seen = new Set<string>();
  // Single script: the (augmented) scripts every character so far is used with.
  let single: Set<string> | null = null;
  // Highly restrictive: which of its script sets cover every character so far.
  let highly = HIGHLY_RESTRICTIVE;
  // Moderately restrictive: the scripts R for which Latin + R covers every character so far;
  // null until the first character not used with Latin names the candidates.
  let moderately: Set<string> | null = null;
  for (const c of s) {
    const scripts = scriptsOf(c);
    if (scripts === null) continue;
    if (scripts.size === 0) return { char: c, scripts: ['no known script'], with: [...seen] };
    const aug = augmented(scripts);
    single = single === null ? aug : new Set([...single].filter((x: string) => aug.has(x)));
    highly = highly.filter((allowed) => meets(scripts, allowed));
    if (!scripts.has('Latin')) {
      moderately =
        moderately === null
          ? new Set([...scripts].filter((r) => RECOMMENDED.has(r) && !NOT_WITH_LATIN.has(r)))
          : new Set([...moderately].filter((r: string) => scripts.has(r)));
    }
    if (single.size === 0 && highly.length === 0 && moderately !== null && moderately.size === 0) {
      return { char: c, scripts: [...scripts], with: [...seen] };
    }
    for (const x of scripts) seen.add(x);
  }
  return null;
}
