import { DomainError } from '../problems/domain.ts';

/** The disk refused a write (read-only, full, gone). Nothing was acknowledged. The edge answers 503. */
export class StoreUnavailableError extends DomainError {
  override name = 'StoreUnavailableError';
  constructor(cause: unknown) {
    super('STORE_UNAVAILABLE', 'The store cannot write right now; nothing was saved. Reads still work. Try again later.', { cause });
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
