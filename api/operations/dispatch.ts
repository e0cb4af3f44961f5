import type { Logger } from 'pino';
import type { z } from 'zod';
import { HttpProblem } from '../http/problem.ts';
import {
  exampleOf,
  guard,
  json,
  queryOf,
  readAnswer,
  writeRoute,
  type RouteHandler,
  type RouteRequest,
  type WriteDeps,
} from '../http/route.ts';
import { parseJson, validate } from '../http/json-body.ts';
import type { OperationContext } from './context.ts';
import { successOf, type AnyOperation } from './operation.ts';
import { matchOperation } from './paths.ts';
import { OPERATIONS } from './table.ts';

const issues = (error: z.ZodError) => error.issues.map((i) => ({ path: `/${i.path.join('/')}`, message: i.message }));

/** The path parameters of a request, decoded and checked against the operation's schema. */
function paramsOf(op: AnyOperation, request: RouteRequest): unknown {
  if (!op.params) return {};
  let raw = request.params;
  if (!raw) {
    // Called in process without the gateway (MCP, A2A): the same match the gateway makes.
    const found = matchOperation(op.method, request.target.split('?')[0]!);
    raw = found && 'handler' in found && found.handler === op ? found.params : {};
  }
  let decoded: Record<string, string>;
  try {
    decoded = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, decodeURIComponent(v)]));
  } catch {
    throw new HttpProblem('BAD_PATH', 'A path parameter cannot be decoded.');
  }
  const result = op.params.safeParse(decoded);
  if (!result.success)
    throw new HttpProblem('BAD_PATH', 'A path parameter does not match its pattern.', {
      extra: { errors: issues(result.error) },
    });
  return result.data;
}

function queryFor(op: AnyOperation, request: RouteRequest): unknown {
  if (!op.query) return {};
  const result = op.query.safeParse(Object.fromEntries(queryOf(request)));
  if (!result.success)
    throw new HttpProblem('INVALID_QUERY', 'A query parameter does not match its schema.', {
      extra: { errors: issues(result.error) },
    });
  return result.data;
}

/** The engine handler of one declaration: its inputs parsed in order, then its work, answered with its 2xx. */
export function handlerOf(op: AnyOperation, ctx: OperationContext, writes: WriteDeps): RouteHandler {
  if (op.raw) return (request) => op.raw!(request, ctx);
  const handle = op.handle;
  if (!handle) throw new Error(`${op.id} has neither handle nor raw`);
  const status = successOf(op);
  if (op.idempotency && op.body) {
    // The write pipeline: rate limit, parse, validate, Idempotency-Key, then the work.
    const replay = op.replay;
    return writeRoute(
      op.idempotency,
      op.body,
      writes,
      async (body, request, keep) => ({
        status,
        body: await handle(
          {
            params: paramsOf(op, request),
            query: queryFor(op, request),
            body,
            request,
            keep: keep && ((answer) => keep({ status, body: answer })),
          },
          ctx,
        ),
      }),
      replay && (async (kept) => ({ status: kept.status, body: await replay(kept.body, ctx) })),
    );
  }
  if (op.method === 'GET') {
    return async (request) =>
      readAnswer(
        request,
        await handle({ params: paramsOf(op, request), query: queryFor(op, request), body: undefined, request }, ctx),
      );
  }
  return async (request) => {
    const rate = op.rateLimit ? await writes.limiter.take(request.client) : {};
    const params = paramsOf(op, request);
    const query = queryFor(op, request);
    // With other media types than JSON the handler reads the body itself.
    const body = op.body && !op.bodyMedia ? validate(op.body, parseJson(request.body)) : undefined;
    return json(status, await handle({ params, query, body, request }, ctx), rate);
  };
}

/** 405 with Allow; a POST route's answer carries an example body, as its GET always has. */
export function methodNotAllowed(allow: string[], others: readonly AnyOperation[]): HttpProblem {
  const post = others.find((op) => op.method === 'POST' && op.body);
  if (allow.length === 1 && allow[0] === 'POST') {
    return new HttpProblem('METHOD_NOT_ALLOWED', 'This route takes POST with a JSON body like `example`.', {
      headers: { Allow: 'POST' },
      extra: post ? { example: exampleOf(post.body!) } : {},
    });
  }
  return new HttpProblem('METHOD_NOT_ALLOWED', `This route takes ${allow.join(', ')}.`, {
    headers: { Allow: allow.join(', ') },
  });
}

/** What the gateway asks before it reads a body: the handler and params, or the refusal to send. */
export type Lookup =
  | { handler: RouteHandler; params: Record<string, string>; operation?: AnyOperation }
  | { refuse: HttpProblem }
  | undefined;

export interface OperationRoutes {
  /** The guarded engine handler of every operation with one (documents too: MCP and A2A read them). */
  handlers: Map<string, RouteHandler>;
  /** Method-and-path lookup over the engine's operations. */
  lookup(method: string, path: string): Lookup;
}

/** The engine's routes from the operation table; `handlers` is filled with every operation's (by id). */
export function createOperationRoutes(
  ctx: OperationContext,
  writes: WriteDeps,
  logger: Logger,
  handlers = new Map<string, RouteHandler>(),
): OperationRoutes {
  for (const op of OPERATIONS as readonly AnyOperation[]) {
    if (op.handle || op.raw) handlers.set(op.id, guard(handlerOf(op, ctx, writes), logger));
  }
  return {
    handlers,
    lookup(method, path) {
      // Pages and documents are matched too, and left to the gateway's files and Astro.
      const found = matchOperation(method, path);
      if (!found) return undefined;
      if ('allow' in found)
        return found.others.some((op) => op.served === 'engine')
          ? { refuse: methodNotAllowed(found.allow, found.others) }
          : undefined;
      if (found.handler.served !== 'engine') return undefined;
      return { handler: handlers.get(found.handler.id)!, params: found.params, operation: found.handler };
    },
  };
}
