import { isDomainError, PROBLEMS, type ProblemCode } from '../problems/index.ts';

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
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    status: number,
    code: ProblemCode,
    detail: string,
    options: { title?: string; headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.status = status;
    this.code = code;
    const entry = PROBLEMS[code] as { headers?: Record<string, string> } | undefined;
    this.headers = { ...entry?.headers, ...options.headers };
    this.extra = { ...(options.title ? { title: options.title } : {}), ...options.extra };
  }

  /** The problem of a code of the table, with the status the table gives it. */
  static of(code: ProblemCode, detail: string, options: ConstructorParameters<typeof HttpProblem>[3] = {}): HttpProblem {
    return new HttpProblem(PROBLEMS[code].status, code, detail, options);
  }

  body(instance?: string): ProblemBody {
    return {
      type: `/problems/${this.code.toLowerCase().replaceAll('_', '-')}`,
      title: titleOf(this.status),
      status: this.status,
      detail: this.message,
      ...(instance ? { instance } : {}),
      code: this.code,
      ...this.extra,
    };
  }

  /** The answer of this problem, as a route returns it. */
  toAnswer(instance?: string): { status: number; headers: Record<string, string>; body: string } {
    return { status: this.status, headers: { 'Content-Type': PROBLEM_TYPE, ...this.headers }, body: JSON.stringify(this.body(instance)) };
  }
}

export const isHttpProblem = (e: unknown): e is HttpProblem => e instanceof HttpProblem;

/**
 * The one edge from the domain to HTTP: an HttpProblem as it is, a domain error through the problem
 * table, anything else null (the caller logs it and answers 500).
 */
export function problemOf(error: unknown): HttpProblem | null {
  if (isHttpProblem(error)) return error;
  if (isDomainError(error)) return HttpProblem.of(error.code, error.message, { extra: error.extra });
  return null;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};
const titleOf = (status: number) => TITLES[status] ?? 'Error';

