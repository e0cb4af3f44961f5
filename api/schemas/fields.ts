import { z } from 'zod';
import { refusedInName, refusedInText } from '../names/characters.ts';
import { nameProblem } from '../names/name-rule.ts';

/** A check that refuses the first character `find` names, with its code point and why. */
const refusing =
  (find: (text: string) => { codePoint: string; why: string } | null) => (ctx: z.core.ParsePayload<string>) => {
    const found = find(ctx.value);
    if (found)
      ctx.issues.push({
        code: 'custom',
        input: ctx.value,
        message: `must not contain ${found.codePoint} (${found.why})`,
      });
  };

/**
 * A trimmed text field with a length range that refuses, by Unicode's own properties, the
 * characters that change how a text shows without being seen (controls but tab and line breaks,
 * format characters, default-ignorables, lone surrogates: api/names/characters.ts). They are
 * refused (422 naming the character), never silently removed, and checked before trimming, since
 * JavaScript's trim() would drop a leading BOM without a word.
 */
export function text(min: number, max: number) {
  return z
    .string()
    .check(refusing(refusedInText))
    .trim()
    .min(min, `must not be empty`)
    .max(max, `must be at most ${max} characters`);
}

/**
 * A public name (api/names/name-rule.ts): trimmed and put in NFC, it holds no control,
 * format, private-use, unassigned or default-ignorable character, its combining marks sit on
 * letters, and its scripts do not mix as UTS #39 forbids. Whether another citizen holds it is the
 * domain's question (409 NAME_TAKEN), not the schema's.
 */
export function publicName(min: number, max: number) {
  return z
    .string()
    .check(refusing(refusedInName))
    .trim()
    .normalize('NFC')
    .min(min, `must not be empty`)
    .max(max, `must be at most ${max} characters`)
    .check((ctx) => {
      // One refusal at a time: the characters first, then how they are put together.
      if (refusedInName(ctx.value)) return;
      const problem = nameProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', input: ctx.value, message: problem });
    });
}

/** An absolute http(s) URL of at most 2048 characters. */
export const HttpUrl = z
  .string()
  .trim()
  .max(2048, 'must be at most 2048 characters')
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }));
