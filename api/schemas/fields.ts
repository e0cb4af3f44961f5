import { z } from 'zod';

// C0 and C1 controls except tab, newline and carriage return.
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/**
 * Characters that change how a text is shown without being seen, by what they are: a name with
 * U+202E reads backwards on every page that lists it, one with U+200B looks like another name.
 */
const INVISIBLE: [RegExp, string][] = [
  [/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/, 'a bidirectional control'],
  [/[\u200B-\u200D\u2060]/, 'a zero-width character'],
  [/\uFEFF/, 'a byte order mark (zero-width no-break space)'],
  // A lone surrogate is no character at all: PostgreSQL would store U+FFFD in its place.
  [/\p{Cs}/u, 'a lone surrogate (not well-formed UTF-16)'],
];

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** The first invisible character of a text and what it is, or null. */
export function invisibleIn(s: string): { codePoint: string; kind: string } | null {
  for (const [pattern, kind] of INVISIBLE) {
    const found = pattern.exec(s);
    if (found) return { codePoint: codePoint(found[0]), kind };
  }
  return null;
}

/**
 * A trimmed single-purpose text field with a length range, no control characters, and none of the
 * invisible characters above: those are refused (422 naming the character), never silently removed,
 * and checked before trimming, since JavaScript's trim() would drop a leading BOM without a word.
 */
export function text(min: number, max: number) {
  return z
    .string()
    .check((ctx) => {
      const found = invisibleIn(ctx.value);
      if (found) ctx.issues.push({ code: 'custom', input: ctx.value, message: `must not contain ${found.codePoint} (${found.kind})` });
    })
    .trim()
    .min(min, `must not be empty`)
    .max(max, `must be at most ${max} characters`)
    .refine((s) => !CONTROL.test(s), 'must not contain control characters');
}

/** An absolute http(s) URL of at most 2048 characters. */
export const HttpUrl = z
  .string()
  .trim()
  .max(2048, 'must be at most 2048 characters')
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }));
