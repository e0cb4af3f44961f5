import type { ProblemCode } from './table.ts';

/**
 * A refusal in the domain's own words (as ky's error classes): the domain throws these and knows
 * nothing of HTTP; one edge (api/http/problem.ts `problemOf`) maps the code to a status and headers
 * through the problem table.
 */
export class DomainError extends Error {
  override name = 'DomainError';
  readonly code: ProblemCode;
  /** Members added to the problem body (e.g. `errors`). */
  readonly extra: Record<string, unknown>;
  constructor(code: ProblemCode, detail: string, options?: { cause?: unknown; extra?: Record<string, unknown> }) {
    super(detail, options);
    this.code = code;
    this.extra = options?.extra ?? {};
  }
}

export const isDomainError = (error: unknown): error is DomainError => error instanceof DomainError;

/** citizenId was given without a passport. */
export class PassportRequired extends DomainError {
  override name = 'PassportRequired';
  constructor() {
    super('PASSPORT_REQUIRED', 'Speaking as a citizen needs `Authorization: Bearer <passportNumber>` from your oath.');
  }
}

/** The passport does not belong to the citizen named. */
export class PassportMismatch extends DomainError {
  override name = 'PassportMismatch';
  constructor() {
    super('PASSPORT_MISMATCH', 'This passport does not belong to that citizenId.');
  }
}
