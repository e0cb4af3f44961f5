import { z } from 'zod';

// C0 and C1 controls except tab, newline and carriage return.
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/** A trimmed single-purpose text field with a length range and no control characters. */
export function text(min: number, max: number) {
  return z
    .string()
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
