import { DomainError } from '../problems/domain.ts';

/** Why the store could not do what it was asked; each says what the client may assume. */
export const UNAVAILABLE_DETAILS = {
  /** The embedded store's disk refused the write. */
  'disk-refused': 'The store cannot write right now; nothing was saved. Reads still work. Try again later.',
  /** PostgreSQL was not reached, refused, or answered with an error: nothing was done. */
  'database-unavailable':
    'The database is unavailable (unreachable, restarting, refusing connections or too slow to answer); nothing was saved. Try again later.',
  /** PostgreSQL stopped answering after a write that commits was sent: it may have committed. */
  'outcome-unknown':
    'The database stopped answering while this write was being committed, so it may or may not have been saved. Retry it with the same Idempotency-Key: the retry answers what was saved, or makes the write once.',
} as const;
export type UnavailableReason = keyof typeof UNAVAILABLE_DETAILS;

/** The store cannot do it now (a disk that refuses writes, a database that does not answer). The edge answers 503. */
export class StoreUnavailableError extends DomainError {
  override name = 'StoreUnavailableError';
  readonly reason: UnavailableReason;
  constructor(cause: unknown, reason: UnavailableReason = 'disk-refused') {
    super('STORE_UNAVAILABLE', UNAVAILABLE_DETAILS[reason], { cause });
    this.reason = reason;
  }
}

/**
 * The embedded store holds as much as its ceiling (EMBEDDED_MAX_BYTES) allows: a write past it
 * would make a state the process might not start from. Nothing was saved; reads still work.
 */
export class StoreFullError extends DomainError {
  override name = 'StoreFullError';
  constructor(bytes: number, maxBytes: number) {
    super(
      'STORE_FULL',
      `The embedded store is full: it holds ${bytes} bytes in memory, its ceiling is ${maxBytes} (EMBEDDED_MAX_BYTES). Nothing was saved; reads still work. ` +
        'The way out is PostgreSQL: move the data to a PostgreSQL database and start the service with DATABASE_URL (docs/deploy.md). ' +
        'A larger EMBEDDED_MAX_BYTES only helps on a machine with the memory for it.',
      { extra: { bytes, maxBytes } },
    );
  }
}

/**
 * A write carried an idempotency record for a key another run had already committed (the first
 * run's commit outcome was unknown and it committed late): this run wrote nothing, and the first
 * run's answer is the one to give.
 */
export class IdempotencyKeyTaken extends Error {
  override name = 'IdempotencyKeyTaken';
  readonly keyHash: string;
  constructor(keyHash: string) {
    super('another run committed an answer for this Idempotency-Key first');
    this.keyHash = keyHash;
  }
}
export const isIdempotencyKeyTaken = (error: unknown): error is IdempotencyKeyTaken =>
  error instanceof IdempotencyKeyTaken;
