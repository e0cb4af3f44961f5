import { HttpProblem } from '../http/problem.ts';

/** The disk refused a write (read-only, full, gone). Nothing was acknowledged. */
export class StoreUnavailableError extends HttpProblem {
  override name = 'StoreUnavailableError';
  constructor(cause: unknown) {
    super(503, 'STORE_UNAVAILABLE', 'The store cannot write right now; nothing was saved. Reads still work. Try again later.', {
      headers: { 'Retry-After': '30' },
    });
    this.cause = cause;
  }
}
