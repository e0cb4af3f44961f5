import Negotiator from 'negotiator';
import { remember } from '../memo.ts';

/** What a page offers, in the server's order of preference: HTML wins a tie (`*\/*`, `text/*`). */
const OFFERED = ['text/html', 'text/markdown'];

/**
 * Accept values remembered with their answer: browsers and agents send a handful of distinct
 * ones, so a page read parses none. Bounded (MEMO.entries values of at most MEMO.chars characters;
 * the map starts afresh when full), so no client can make it grow.
 */
export const NEGOTIATION_MEMO = { entries: 256, chars: 512 } as const;
const memo = new Map<string, boolean>();

/**
 * Whether a request's Accept header prefers `text/markdown` to `text/html` (RFC 9110 12.5.1: by
 * q-value, then the more specific range, then the order offered; `q=0` refuses). No Accept, or one
 * that takes neither, gets HTML: a page never answers 406.
 */
export function prefersMarkdown(accept: string | undefined): boolean {
  if (accept === undefined || accept === '') return false;
  const known = memo.get(accept);
  if (known !== undefined) return known;
  const markdown = new Negotiator({ headers: { accept } }).mediaType(OFFERED) === 'text/markdown';
  if (accept.length <= NEGOTIATION_MEMO.chars) remember(memo, NEGOTIATION_MEMO.entries, accept, markdown);
  return markdown;
}
