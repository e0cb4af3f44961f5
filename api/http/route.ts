import { z } from 'zod';
import type { Logger } from 'pino';
import { apiSchemas } from '../schemas/registry.ts';
import type { Idempotency, StoredAnswer } from './idempotency.ts';
import { compressFor } from './encoding.ts';
import { parseJson, validate } from './json-body.ts';
import { HttpProblem, isHttpProblem } from './problem.ts';
import type { WriteLimiter } from './rate-limit.ts';

/** What a framework-free route sees of a request. */
export interface RouteContext {
  request: Request;
  /** The client address (for rate limiting only; never stored in clear). */
  client: string;
}
export type RouteHandler = (ctx: RouteContext) => Promise<Response>;

/** Every live JSON answer is this type and is never cached. */
const LIVE_JSON = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...LIVE_JSON, ...headers } });
}

/** A read's JSON answer: compressed (br, then gzip) when the client takes it and the body is large enough to gain. */
export async function readAnswer(request: Request, body: unknown): Promise<Response> {
  const text = JSON.stringify(body);
  const headers = { ...LIVE_JSON, Vary: 'Accept-Encoding' };
  const compressed = await compressFor(request.headers.get('accept-encoding') ?? undefined, text);
  if (!compressed) return new Response(text, { status: 200, headers });
  const { buffer, byteOffset, byteLength } = compressed.bytes;
  return new Response(new Uint8Array(buffer as ArrayBuffer, byteOffset, byteLength), { status: 200, headers: { ...headers, 'Content-Encoding': compressed.coding } });
}

/** Every known error becomes problem+json; anything else is logged once and answered 500. */
export function guard(handler: RouteHandler, logger: Logger): RouteHandler {
  return async (ctx) => {
    const instance = new URL(ctx.request.url).pathname;
    try {
      return await handler(ctx);
    } catch (error) {
      if (isHttpProblem(error)) return error.toResponse(instance);
      logger.error({ err: error, path: instance }, 'route failed');
      return new HttpProblem(500, 'INTERNAL', 'The server failed to answer. Nothing was changed.').toResponse(instance);
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
  return async (ctx) => {
    if (ctx.request.method === 'POST') return handler(ctx);
    throw new HttpProblem(405, 'METHOD_NOT_ALLOWED', 'This route takes POST with a JSON body like `example`.', {
      headers: { Allow: 'POST' },
      extra: { example },
    });
  };
}

/** GET only (HEAD too): other methods answer 405. */
export function getOnly(handler: RouteHandler): RouteHandler {
  return async (ctx) => {
    if (ctx.request.method === 'GET' || ctx.request.method === 'HEAD') return handler(ctx);
    throw new HttpProblem(405, 'METHOD_NOT_ALLOWED', 'This route is read-only: use GET.', { headers: { Allow: 'GET, HEAD' } });
  };
}

export interface WriteDeps {
  limiter: WriteLimiter;
  idempotency: Idempotency;
}

/**
 * The shared write pipeline: rate limit, strict JSON, schema validation, Idempotency-Key, then
 * the route's own work. Unknown keys are dropped by the schema and never stored.
 */
export function writeRoute<S extends z.ZodType>(
  name: string,
  schema: S,
  deps: WriteDeps,
  handle: (input: z.output<S>, ctx: RouteContext) => Promise<StoredAnswer>,
): RouteHandler {
  return postOnly(exampleOf(schema), async (ctx) => {
    const rate = await deps.limiter.take(ctx.client);
    const bytes = new Uint8Array(await ctx.request.arrayBuffer());
    const input = validate(schema, parseJson(bytes));
    const key = ctx.request.headers.get('idempotency-key');
    const answer = await deps.idempotency(name, key, bytes, () => handle(input, ctx));
    return json(answer.status, answer.body, { ...rate, ...(answer.replayed ? { 'Idempotent-Replayed': 'true' } : {}) });
  });
}

/** `?cursor=&limit=` of every list route (limit 1-200, default 50). */
export const PageQuerySchema = z.object({
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export function pageQuery(request: Request) {
  const params = Object.fromEntries(new URL(request.url).searchParams);
  const result = PageQuerySchema.safeParse(params);
  if (!result.success) {
    throw new HttpProblem(400, 'INVALID_QUERY', 'cursor must come from nextCursor and limit must be 1-200.', {
      extra: { errors: result.error.issues.map((i) => ({ path: `/${i.path.join('/')}`, message: i.message })) },
    });
  }
  return result.data;
}
