import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import unhomoglyph from 'unhomoglyph';
import { DomainError } from '../problems/domain.ts';
import { codePointOf } from './characters.ts';
import { mixedScript } from './scripts.ts';

/**
 * The rule every public name follows (oath, feed message, and so MCP and A2A, which reuse the
 * schemas), past the characters it may hold (characters.ts): its combining marks sit on letters
 * (UTS #39 5.4), and its scripts mix only as UTS #39 5.2 Moderately Restrictive allows (scripts.ts).
 * `name` is already trimmed and in NFC. The problem names the code point and why; null when fine.
 */
export function nameProblem(name: string): string | null {
  const lone = /(?:^|\p{White_Space})(\p{M})/u.exec(name);
  if (lone)
    return `must not contain ${codePointOf(lone[1]!)} where it does (a combining mark with no letter to sit on: it would sit on whatever is shown before the name)`;
  // Marks are counted in NFD, where each mark stands alone.
  const decomposed = name.normalize('NFD');
  const piled = /[\p{Mn}\p{Me}]{4}([\p{Mn}\p{Me}])/u.exec(decomposed);
  if (piled)
    return `must not contain ${codePointOf(piled[1]!)} where it does (a fifth combining mark on one letter: marks pile up over the text around them)`;
  const twice = /([\p{Mn}\p{Me}])\1/u.exec(decomposed);
  if (twice)
    return `must not contain ${codePointOf(twice[1]!)} twice on one letter (the same combining mark twice looks like once)`;
  const mixed = mixedScript(name);
  if (mixed) {
    const scripts = mixed.scripts.join(' or ').replaceAll('_', ' ');
    return `must not contain ${codePointOf(mixed.char)} (${scripts}) with ${mixed.with.join(', ').replaceAll('_', ' ')} in one name: a name is written in one script, or in Latin with one other that does not look like it (UTS #39, moderately restrictive)`;
  }
  return null;
}

/** UTS #39 skeleton: NFD, default-ignorables removed, each character replaced by its prototype in confusables.txt, NFD again. */
export function skeleton(s: string): string {
  return unhomoglyph(s.normalize('NFD').replace(/\p{Default_Ignorable_Code_Point}/gu, '')).normalize('NFD');
}

// Full case folding as far as JavaScript has it: upper then lower folds ß to ss and every sigma alike.
const fold = (s: string) => s.toUpperCase().toLowerCase().normalize('NFKC');
// A page shows a run of spaces as one.
const oneSpace = (s: string) => s.replace(/\p{White_Space}+/gu, ' ').trim();

/** What two names are compared by: equal keys (either one) mean the names look alike. */
export interface NameKeys {
  /** The UTS #39 skeleton of the case-folded NFKC form: `Wall`, `ＷＡＬＬ`, `wа11` (Cyrillic а) are all `wall`. */
  folded: string;
  /**
   * The same, folded after a first skeleton too: the skeleton maps capital I to l, which folding
   * alone would make an i, so `PayPaI` (capital i) is `paypal` here as it looks.
   */
  shaped: string;
}

/** The keys a name is unique by. Computed for any stored string, valid under today's rule or not. */
export function nameKeys(name: string): NameKeys {
  const n = oneSpace(name.normalize('NFKC'));
  return { folded: oneSpace(skeleton(fold(n))), shaped: oneSpace(skeleton(fold(skeleton(n)))) };
}

/** Bumped by hand when nameKeys changes in a way the digest below might not show. */
const NAME_KEYS_RULE = 1;
let stamp: string | undefined;
/**
 * What the keys of a name depend on: this rule, Unicode's and ICU's data (NFKC, NFD, case) and the
 * confusables table, with a digest of the keys of every character the table maps. Keys kept by
 * another process (the embedded store's snapshot carries hashes of them) are used only under the
 * same stamp, and computed anew otherwise. Computed once, on first use (a few milliseconds).
 */
export function nameKeysStamp(): string {
  if (stamp) return stamp;
  const table = createRequire(import.meta.url)('unhomoglyph/data.json') as Record<string, string>;
  const keys = nameKeys(`${Object.keys(table).join(' ')} ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 ß ς Σ ﬁ Ⅸ ＷＡＬＬ`);
  const digest = createHash('sha256').update(`${keys.folded}\n${keys.shaped}`).digest('hex').slice(0, 16);
  const { unicode, icu } = process.versions;
  return (stamp = `name keys ${NAME_KEYS_RULE}; unicode ${unicode}; icu ${icu}; confusables ${digest}`);
}

/** The name the wall's shouts go by ("<name> took the oath"); no citizen or message may take it, or a look-alike. */
export const WALL_NAME = 'wall';
const WALL_KEYS = nameKeys(WALL_NAME);

/** True when the two names look alike (one of their keys is equal). */
export const sameKeys = (a: NameKeys, b: NameKeys): boolean => a.folded === b.folded || a.shaped === b.shaped;

/** True when `name` is the wall's, or looks like it. */
export const isWallName = (name: string): boolean => sameKeys(nameKeys(name), WALL_KEYS);

/** The name, or one that looks like it, is held by a citizen or by the wall. */
export class NameTaken extends DomainError {
  override name = 'NameTaken';
  constructor(given: string, heldBy: string) {
    const holder =
      heldBy === WALL_NAME
        ? `"${WALL_NAME}", the name of the wall's shouts`
        : `${JSON.stringify(heldBy)}, the name of a citizen`;
    super(
      'NAME_TAKEN',
      `The name ${JSON.stringify(given)} is taken: it looks like ${holder}. Names are compared in any case and width, look-alike letters as one (UTS #39 skeletons). Choose another name, for example with a random suffix.`,
      {
        extra: { heldBy },
      },
    );
  }
}
