import { DomainError } from '../problems/domain.ts';

/** The disk refused a write (read-only, full, gone). Nothing was acknowledged. The edge answers 503. */
export class StoreUnavailableError extends DomainError {
  override name = 'StoreUnavailableError';
  constructor(cause: unknown) {
    super('STORE_UNAVAILABLE', 'The store cannot write right now; nothing was saved. Reads still work. Try again later.', { cause });
  }
}
