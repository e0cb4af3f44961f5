import { createIsbotFromList, list } from 'isbot';
import { indexedAlternation, topLevelAlternation } from './literal-index.ts';

// isbot's own answer, from its own list, compiled in two parts instead of one RegExp. In isbot's
// single alternation V8 tries every `^...` pattern (78 of 206) at every position of the string and
// fails each there; gathered under one leading `^` they are tried at position 0 only. The rest are
// tried only where their leading literal occurs (literal-index.ts). The same answer
// (test/telemetry/isbot-split.test.ts compares both on every User-Agent of our fixtures) in about a
// third of the time on a browser's string, the case that always reaches isbot.

/** isbot's list split in two: the patterns anchored at the start of the string, and the rest. */
export function splitIsbotList(patterns: readonly string[]): { anchored: string[]; anywhere: string[] } {
  const anchored: string[] = [];
  const anywhere: string[] = [];
  for (const p of patterns) (p.startsWith('^') && !topLevelAlternation(p) ? anchored : anywhere).push(p);
  return { anchored, anywhere };
}

const { anchored, anywhere } = splitIsbotList(list);
/** isbot's patterns anchored at the start, as one RegExp tried at position 0. */
export const isbotAtStart = createIsbotFromList([`^(?:${anchored.map((p) => p.slice(1)).join('|')})`]);
/** isbot's other patterns, for an index that also holds other patterns (classify.ts's person gate). */
export const ISBOT_ANYWHERE: readonly string[] = anywhere;
const inside = indexedAlternation(anywhere);

/** isbot(userAgent), the same answer sooner. */
export const isbot = (userAgent: string): boolean => isbotAtStart(userAgent) || (userAgent !== '' && inside(userAgent));

/**
 * isbot's patterns that read a string's shape, not a word: a lone product token with a version
 * (`^[\w .-]+/v?\d...$`, which takes `Dillo/2.2`, `Clementine 1.1` and `Lavf52.111.0` alike), a
 * string starting with a digit or `(`, a `|`, `()`, `Mozilla/3.0 (OneToken/1.0)`. An unknown product token alone is no evidence of
 * a bot: such a string is an unknown client unless a word says more.
 */
export const isShapePattern = (p: string) =>
  // An address (`@[a-z][\w-]+\.`) is a contact, evidence; `v?` is a version's optional v;
  // `^mozilla/\d\.\d\s\((?:compatible;)?...\)$` reads a browser prefix around one unknown token.
  !p.startsWith('@') &&
  !/[a-z]/i.test(
    p
      .replace(/\\./g, '')
      .replace(/\[[^\]]*\]/g, '')
      .replace(/v\?|mozilla|compatible/g, ''),
  );

const { anchored: wordAnchored, anywhere: wordAnywhere } = splitIsbotList(list.filter((p) => !isShapePattern(p)));
const wordAtStart = createIsbotFromList([`^(?:${wordAnchored.map((p) => p.slice(1)).join('|')})`]);
const wordInside = indexedAlternation(wordAnywhere);

/** Whether one of isbot's word patterns (a name, a bot word, a tool) matches: evidence, where its shape patterns are not. */
export const isbotByWord = (userAgent: string): boolean =>
  wordAtStart(userAgent) || (userAgent !== '' && wordInside(userAgent));

const wordPattern = new RegExp(list.filter((p) => !isShapePattern(p)).join('|'), 'i');
/**
 * Where isbot's word patterns first match in the string, and what they matched: where a bot that
 * names itself nowhere else has its name ("Neustar WPM" in a browser's platform comment).
 */
export function isbotWordAt(userAgent: string): { at: number; text: string } | null {
  const m = wordPattern.exec(userAgent);
  return m ? { at: m.index, text: m[0] } : null;
}
