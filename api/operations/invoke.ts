import { z } from 'zod';
import type { RouteHandler } from '../http/route.ts';
import type { FunnelStep } from '../telemetry/ledger/ledger.ts';
import type { AnyOperation } from './operation.ts';
import { TOOL_OPERATIONS } from './paths.ts';

/** The arguments a tool takes: its body, or its path and query parameters; no schema when it takes none. */
export function toolInput(op: AnyOperation): z.ZodObject | undefined {
  if (op.method === 'POST') return op.body as z.ZodObject | undefined;
  const shapes = [op.params, op.query].filter((s): s is z.ZodObject => s instanceof z.ZodObject).map((s) => s.shape);
  return shapes.length ? z.object(Object.assign({}, ...shapes)) : undefined;
}

/** Over MCP and A2A the passport is an argument, since a call carries no HTTP header of its own. */
export const PassportArgument = z.object({
  /** The passportNumber of your oath: with citizenId (a message), or when you score as your own citizen (your drift window). */
  passportNumber: z.string().max(200).optional(),
});

/**
 * A write's Idempotency-Key is an argument too: an agent that lost an answer (an oath's passport, a
 * receipt) calls again with the same key and gets it, as over HTTP, instead of a second write.
 */
export const IdempotencyArgument = z.object({
  idempotencyKey: z
    .string()
    .max(255)
    .optional()
    .describe(
      'Idempotency-Key of this write: a random UUID v4 (or 128+ random bits); a retry with the same key and arguments answers what the first call did',
    ),
});

/** The arguments a tool takes over MCP and A2A. */
export function callInput(op: AnyOperation): z.ZodObject | undefined {
  const input = toolInput(op);
  const extra = {
    ...(op.credentials === 'passport-optional' || op.credentials === 'passport' ? PassportArgument.shape : {}),
    ...(op.idempotency ? IdempotencyArgument.shape : {}),
  };
  if (Object.keys(extra).length === 0) return input;
  return input ? input.extend(extra) : z.object(extra);
}

/** What a tool call answered: the status and JSON body of its operation. */
export interface Invocation {
  status: number;
  body: unknown;
}

/**
 * Who calls: the client address (rate limits); the funnel step its call took is set on it, and its
 * door hands it to the gateway with the answer, to be counted with the request that carried it.
 */
export interface Caller {
  client: string;
  step?: FunnelStep;
}

export type Invoke = (tool: string, args: Record<string, unknown>, caller: Caller) => Promise<Invocation | null>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// An argument as text for a path or query: an object or array as its JSON, which the route's schema
// then refuses (String() throws on {"toString": 1}, and a client's mistake must not be a crash).
const asText = (value: unknown): string =>
  typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);

/**
 * Calls an operation as its tool describes it, through the same guarded handler as HTTP (so the
 * same schemas, limits, passports and storage): a POST sends the arguments as its body; a GET puts
 * `{name}` arguments into the path and the rest into the query. A 2xx sets the operation's
 * funnel step on the caller. Null for a tool that does not exist.
 */
export function createInvoker(handlers: Map<string, RouteHandler>): Invoke {
  const byName = new Map(TOOL_OPERATIONS.map((op) => [op.tool!.name, op]));
  return async (name, args, caller) => {
    const op = byName.get(name);
    const handler = op && handlers.get(op.id);
    if (!op || !handler) return null;
    const { passportNumber, idempotencyKey, ...rest } = args;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (typeof passportNumber === 'string' && passportNumber !== '') headers.authorization = `Bearer ${passportNumber}`;
    if (typeof idempotencyKey === 'string' && op.idempotency) headers['idempotency-key'] = idempotencyKey;
    let target = op.path;
    let body = new Uint8Array();
    if (op.method === 'POST') {
      body = encoder.encode(JSON.stringify(rest));
    } else {
      const query = { ...rest };
      target = op.path.replace(/\{(\w+)\}/g, (_, key: string) => {
        const value = asText(query[key] ?? '');
        delete query[key];
        return encodeURIComponent(value);
      });
      const search = new URLSearchParams(
        Object.entries(query).flatMap(([k, v]) => (v === undefined || v === null ? [] : [[k, asText(v)]])),
      );
      if (search.size > 0) target += `?${search}`;
    }
    const answer = await handler({ method: op.method, target, headers, body, client: caller.client });
    if (op.funnel && answer.status >= 200 && answer.status < 300) caller.step = op.funnel;
    const text = typeof answer.body === 'string' ? answer.body : decoder.decode(answer.body);
    return { status: answer.status, body: text === '' ? null : JSON.parse(text) };
  };
}
