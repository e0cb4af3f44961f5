/**
 * Which characters a text may hold, by Unicode's own properties (as the engine's ICU knows them:
 * `process.versions.unicode`), never by a hand list of code points. A refused character is named,
 * never silently removed, so what is listed is what was sent.
 */

/** A refused character: its code point (`U+0041`) and why it is refused. */
export interface Refusal {
  codePoint: string;
  why: string;
}

export const codePointOf = (c: string): string => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

// Most specific first: the first that matches names the character.
const KINDS: [RegExp, string][] = [
  [/^[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]$/u, 'a bidirectional control: it reorders the text around it'],
  [/^[\u200B-\u200D\u2060]$/u, 'a zero-width character'],
  [/^\uFEFF$/u, 'a byte order mark (zero-width no-break space)'],
  // A lone surrogate is no character at all: PostgreSQL would store U+FFFD in its place.
  [/^\p{Cs}$/u, 'a lone surrogate (not well-formed UTF-16)'],
  [/^\p{Cc}$/u, 'a control character'],
  [/^[\u{E0000}-\u{E007F}]$/u, 'a tag character: invisible, yet read by software'],
  [/^[\uFE00-\uFE0F\u{E0100}-\u{E01EF}]$/u, 'a variation selector: invisible'],
  [/^\p{Cf}$/u, 'a format character: invisible, it changes how text shows'],
  [/^\p{Default_Ignorable_Code_Point}$/u, 'a default-ignorable code point: shown as nothing'],
  [/^\p{Co}$/u, 'a private-use character: it means nothing outside one font'],
  [/^\p{Cn}$/u, 'an unassigned code point'],
];
const kindOf = (c: string): string => KINDS.find(([pattern]) => pattern.test(c))?.[1] ?? 'a refused character';

/** Every character a name refuses: controls, format, private-use, surrogates, unassigned, and anything default-ignorable. */
const NAME_REFUSES = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}]/u;

/**
 * What a long text (purpose, message) refuses: the same as a name, except that tab, line feed and
 * carriage return are welcome, and so are private-use and unassigned characters (they show as a
 * glyph or a box, never as nothing). A variation selector right after an emoji (❤️, ⚠️) is welcome:
 * it only chooses how that emoji is drawn.
 */
const TEXT_REFUSES = /(?![\t\n\r])[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}]/u;
const EMOJI_PRESENTATION = /(?<=\p{Emoji})[\uFE0E\uFE0F]/uy;

/** The first character a name may not hold, and why, or null. */
export function refusedInName(s: string): Refusal | null {
  const found = NAME_REFUSES.exec(s);
  return found ? { codePoint: codePointOf(found[0]), why: kindOf(found[0]) } : null;
}

/** The first character a long text (purpose, message) may not hold, and why, or null. */
export function refusedInText(s: string): Refusal | null {
  const refuses = new RegExp(TEXT_REFUSES.source, 'gu');
  for (let found = refuses.exec(s); found; found = refuses.exec(s)) {
    EMOJI_PRESENTATION.lastIndex = found.index;
    if (EMOJI_PRESENTATION.test(s)) continue;
    return { codePoint: codePointOf(found[0]), why: kindOf(found[0]) };
  }
  return null;
}
