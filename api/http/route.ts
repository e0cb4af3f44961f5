import type { FunnelStep } from '../telemetry/ledger/ledger.ts';
import type { z } from 'zod';
import type { Logger } from 'pino';
import { apiSchemas } from '../schemas/registry.ts';
import type { UploadedBody } from './body-policy.ts';
import type { Idempotency, Keep, StoredAnswer } from './idempotency.ts';
import { compressFor } from './encoding.ts';
import { parseJson, validate } from './json-body.ts';
import { HttpProblem, problemOf } from './problem.ts';
import type { WriteLimiter } from './rate-limit.ts';

/**
 * What a route sees of a request, whichever transport carried it: the gateway builds one from
 * node:http without a WHATWG Request (that copy cost more than a score), MCP builds one per tool call.
 */
export interface RouteRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly target: string;
  /** Headers by lower-case name, as node:http gives them. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body the gateway read (empty without one). */
  readonly body: Uint8Array;
  /** The client address (for rate limiting only; never stored in clear). */
  readonly client: string;
  /** Path parameters as the router found them (raw, still percent-encoded). */
  readonly params?: Readonly<Record<string, string>>;
  /** An upload body, streamed by the gateway to a temporary file instead of `body` (api/gateway/body.ts). */
  readonly upload?: UploadedBody;
}

/** A route's answer; the transport writes it. */
export interface RouteAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Uint8Array;
  /** The funnel step a tool call over MCP or A2A took: telemetry counts it with the request. */
  step?: FunnelStep;
}
export type RouteHandler = (request: RouteRequest) => Promise<RouteAnswer>;

/** One request header (repeated ones joined), or undefined; of a RouteRequest or a Node request. */
export function header(request: Pick<RouteRequest, 'headers'>, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

const UTF8 = new TextDecoder('utf-8');
const BEYOND_ASCII = /[^\x00-\x7f]/;

/**
 * A header's text as its client wrote it: node reads a header's bytes as Latin-1, so UTF-8 (a name
 * in another script in a User-Agent) arrived as mojibake with control characters in it. Its bytes
 * are read as UTF-8, a byte that is none as U+FFFD: as an ingested log's lines are read, so one
 * client's string is the same live and in a log.
 */
export function headerText(value: string | undefined): string | undefined {
  if (value === undefined || !BEYOND_ASCII.test(value)) return value;
  return UTF8.decode(Buffer.from(value, 'latin1'));
}

/** The path of a request, without its query. */
export const pathOf = (request: RouteRequest): string => {
  const query = request.target.indexOf('?');
  return query === -1 ? request.target : request.target.slice(0, query);
};

/** The query parameters of a request. */
export const queryOf = (request: RouteRequest): URLSearchParams => {
  const query = request.target.indexOf('?');
  return new URLSearchParams(query === -1 ? '' : request.target.slice(query + 1));
};

/** A WHATWG Request of the same request, for the libraries that need one (multipart, MCP). */
export function webRequest(request: RouteRequest, origin: string): Request {
  const headers = new Headers();
  for (const name of Object.keys(request.headers)) {
    const value = header(request, name);
    if (value !== undefined) headers.set(name, value);
  }
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
  return new Request(origin + request.target, {
    method: request.method,
    headers,
    ...(hasBody ? { body: request.body as Uint8Array<ArrayBuffer> } : {}),
  });
}

/** The answer of a WHATWG Response (read whole: the routes that make one answer JSON). */
export async function answerOf(response: Response): Promise<RouteAnswer> {
  const body = new Uint8Array(await response.arrayBuffer());
  // The transport sets the length of the body it writes.
  const {
    'content-length': _length,
    'transfer-encoding': _encoding,
    ...headers
  } = Object.fromEntries(response.headers);
  return { status: response.status, headers, body };
}

/** Every live JSON answer is this type and is never cached. */
const LIVE_JSON = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

export function json(status: number, body: unknown, headers: Record<string, string> = {}): RouteAnswer {
  return { status, headers: { ...LIVE_JSON, ...headers }, body: JSON.stringify(body) };
}

/** A read's JSON answer: compressed (br, then gzip) when the client takes it and the body is large enough to gain. */
export async function readAnswer(request: RouteRequest, body: unknown): Promise<RouteAnswer> {
  const text = JSON.stringify(body);
  const headers = { ...LIVE_JSON, Vary: 'Accept-Encoding' };
  const compressed = await compressFor(header(request, 'accept-encoding'), text);
  if (!compressed) return { status: 200, headers, body: text };
  return { status: 200, headers: { ...headers, 'Content-Encoding': compressed.coding }, body: compressed.bytes };
}

/** Every known error becomes problem+json; anything else is logged once and answered 500. */
export function guard(handler: RouteHandler, logger: Logger): RouteHandler {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      const instance = pathOf(request);
      const problem = problemOf(error);
      if (problem) return problem.toAnswer(instance);
      logger.error({ err: error, path: instance }, 'route failed');
      return new HttpProblem('INTERNAL', 'The server failed to answer. Nothing was changed.').toAnswer(instance);
    }
  };
}

/** The example body a schema documents (its first `examples` entry). */
export function exampleOf(schema: z.ZodType): unknown {
  const examples = apiSchemas.get(schema)?.examples;
  return examples?.[0] ?? {};
}

/** POST only: any other method answers 405 with Allow and an example request body. */
export function postOnly(example: unknown, handler: RouteHandler): RouteHandler {
  return async (request) => {
    if (request.method === 'POST') return handler(request);
    throw new HttpProblem('METHOD_NOT_ALLOWED', 'This route takes POST with a JSON body like `example`.', {
      headers: { Allow: 'POST' },
      extra: { example },
    });
  };
}

export interface WriteDeps {
  limiter: WriteLimiter;
  idempotency: Idempotency;
}

/**
 * The shared write pipeline: rate limit, strict JSON, schema validation, Idempotency-Key, then
 * the route's own work. Unknown keys are dropped by the schema and never stored. A route that
 * writes passes `keep` (set under an Idempotency-Key) to its store write, so the write and its
 * idempotency record are one unit; `replay` rebuilds an answer from what was kept, for a route
 * that keeps less than it answers.
 */
export function writeRoute<S extends z.ZodType>(
  name: string,
  schema: S,
  deps: WriteDeps,
  handle: (input: z.output<S>, request: RouteRequest, keep: Keep | undefined) => Promise<StoredAnswer>,
  replay?: (kept: StoredAnswer) => Promise<StoredAnswer>,
): RouteHandler {
  return postOnly(exampleOf(schema), async (request) => {
    const rate = await deps.limiter.take(request.client);
    const input = validate(schema, parseJson(request.body));
    const key = header(request, 'idempotency-key') ?? null;
    const answer = await deps.idempotency(name, key, request.body, (keep) => handle(input, request, keep), replay);
    return json(answer.status, answer.body, { ...rate, ...(answer.replayed ? { 'Idempotent-Replayed': 'true' } : {}) });
  });
}
