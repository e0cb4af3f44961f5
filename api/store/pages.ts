import { isId } from '../ids.ts';
import { DomainError } from '../problems/domain.ts';
import type { Records } from './embedded/codec.ts';
import type { Page, PageQuery } from './types.ts';

/** Decodes records start..end-1, newest (last) first: a page decodes only its own records. */
function newestFirst<T>(items: Pick<Records<T>, 'at'>, start: number, end: number): T[] {
  const page: T[] = [];
  for (let i = end - 1; i >= start; i--) page.push(items.at(i));
  return page;
}

export const encodeCursor = (id: string): string => Buffer.from(id, 'utf8').toString('base64url');

export function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isId(id)) throw new DomainError('INVALID_CURSOR', 'The cursor is not one this service gave out.');
  return id;
}

/** Newest-first page of an append-only log, by position; the cursor names the position below which to continue. */
export function pageLogNewestFirst<T>(items: Pick<Records<T>, 'at' | 'length'>, query: PageQuery): Page<T> {
  const end = query.cursor ? Math.min(items.length, decodeLogCursor(query.cursor)) : items.length;
  const start = Math.max(0, end - query.limit);
  return { items: newestFirst(items, start, end), nextCursor: start > 0 ? encodeLogCursor(start) : null };
}

/** A log cursor names the position below which the next page starts. */
export const encodeLogCursor = (position: number): string => Buffer.from(`log:${position}`).toString('base64url');

export function decodeLogCursor(cursor: string): number {
  const match = /^log:(\d{1,12})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw new DomainError('INVALID_CURSOR', 'The cursor is not one this service gave out.');
  return Number(match[1]);
}

/**
 * Newest-first page of items kept in ascending id order (UUIDv7 ids sort by time): the page starts
 * just below the cursor's id.
 */
export function pageNewestFirst<T>(items: Records<T>, query: PageQuery): Page<T> {
  let end = items.length;
  if (query.cursor) {
    const below = decodeCursor(query.cursor);
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (items.idAt(mid) < below) lo = mid + 1;
      else hi = mid;
    }
    end = lo;
  }
  const start = Math.max(0, end - query.limit);
  const page = newestFirst(items, start, end);
  return { items: page, nextCursor: start > 0 && page.length > 0 ? encodeCursor(items.idAt(start)) : null };
}
