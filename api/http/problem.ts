import { isDomainError, PROBLEMS, type ProblemCode } from '../problems/index.ts';
import { noteProblem } from '../log.ts';

/** RFC 9457 problem details, as every error of this service is answered. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  /** Stable upper-case code an agent can branch on (the problem table, api/problems/table.ts). */
  code: string;
  errors?: { path: string; message: string }[];
  [extra: string]: unknown;
}

export const PROBLEM_TYPE = 'application/problem+json';

/** An expected failure that knows its HTTP answer (as hono's HTTPException). */
export class HttpProblem extends Error {
  override name = 'HttpProblem';
  readonly status: number;
  readonly code: ProblemCode;
  readonly title: string;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  /** The problem of a code of the table (api/problems/table.ts), which gives its status, title and headers. */
  constructor(
    code: ProblemCode,
    detail: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(detail);
    const entry = PROBLEMS[code];
    this.status = entry.status;
    this.code = code;
    this.title = entry.title;
    this.headers = { ...(entry as { headers?: Record<string, string> }).headers, ...options.headers };
    this.extra = { ...options.extra };
  }

  body(instance?: string): ProblemBody {
    noteProblem(this.code);
    return {
      type: `/problems/${this.code.toLowerCase().replaceAll('_', '-')}`,
      title: this.title,
      status: this.status,
      detail: this.message,
      ...(instance ? { instance } : {}),
      code: this.code,
      ...this.extra,
    };
  }

  /** The answer of this problem, as a route returns it. */
  toAnswer(instance?: string): { status: number; headers: Record<string, string>; body: string } {
    return {
      status: this.status,
      headers: { 'Content-Type': PROBLEM_TYPE, ...this.headers },
      body: JSON.stringify(this.body(instance)),
    };
  }
}

export const isHttpProblem = (e: unknown): e is HttpProblem => e instanceof HttpProblem;

/**
 * The one edge from the domain to HTTP: an HttpProblem as it is, a domain error through the problem
 * table, anything else null (the caller logs it and answers 500).
 */
export function problemOf(error: unknown): HttpProblem | null {
  if (isHttpProblem(error)) return error;
  if (isDomainError(error)) return new HttpProblem(error.code, error.message, { extra: error.extra });
  return null;
}
