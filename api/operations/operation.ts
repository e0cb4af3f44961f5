import type { z } from 'zod';
import type { KeepAnswer } from '../store/types.ts';
import type { RouteAnswer, RouteRequest } from '../http/route.ts';
import type { ProblemCode } from '../problems/table.ts';
import type { FunnelStep } from '../telemetry/ledger/ledger.ts';
import type { OperationContext } from './context.ts';

/** Who may call an operation, and with what. */
/** Which body rules the gateway applies to an operation's request body (api/server.ts `bodyPolicies`). */
export type BodyLimit = 'json' | 'upload' | 'ingest';

export type Credential = 'none' | 'passport-optional' | 'passport' | 'ingest-token';

/** Who answers: the engine's routes, a prebuilt document (MCP and A2A still call its handler), or an Astro page. */
export type Served = 'engine' | 'document' | 'page';

/** One documented answer of an operation. */
export interface Answer {
  description: string;
  schema?: z.ZodType;
  /** application/json unless said. */
  media?: string;
}

/** How an operation is offered as a tool (convert payload, kit, MCP) and as an A2A skill. */
export interface ToolSurface {
  /** snake_case tool and skill id. */
  name: string;
  /** Place in every tool list: spec rule 3 names whats-next, oath, feed, kit and convert first. */
  order: number;
  description: string;
  /** Listed by the convert payload, the kit and /mcp (all of them list the same tools). */
  mcp: boolean;
  /** Runs as an A2A skill through POST /a2a. */
  a2a: boolean;
  /** Served from {canon_url}. */
  canon?: boolean;
}

/** What a handler receives: the parsed, validated parts of the request. */
export interface OperationInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  request: RouteRequest;
  /** Under an Idempotency-Key: pass to the store write, so the write and its record are one unit. */
  keep?: KeepAnswer | undefined;
}

/**
 * One operation, declared once (fastify's `route({ method, url, schema, handler })`): from this the
 * router, /openapi.json, /docs/api, the MCP tools, the A2A skills, the convert payload's and the
 * kit's tools, the 405 examples, the funnel and the README tables are made.
 */
export interface Operation<
  Id extends string = string,
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  /** operationId. */
  id: Id;
  method: 'GET' | 'POST';
  /** OpenAPI path template; `{name}` is one segment, typed by `params`. */
  path: string;
  summary: string;
  tag: 'agents' | 'citizenship' | 'omip' | 'ingress' | 'telemetry';
  served: Served;
  params?: P;
  query?: Q;
  /** The JSON body (validated by the write pipeline or the route). */
  body?: B;
  /** Request media types other than JSON, documented beside it (the ingress takes audio and multipart). */
  bodyMedia?: Record<string, { description: string }>;
  /** The gateway's body rules: ordinary JSON, an audio upload, or a CDN log batch. With bodyMedia the handler reads the body itself. */
  bodyLimit?: BodyLimit;
  /** Answers by status; exactly one 2xx. */
  responses: Record<number, Answer>;
  /** Problem codes this operation may answer beyond the shared ones (api/problems/table.ts). */
  problems: ProblemCode[];
  credentials: Credential;
  /** The rate-limit class: "writes" spends the client's writes per minute (RateLimit headers). */
  rateLimit?: 'writes';
  /** Replays a repeated Idempotency-Key under this scope (the write pipeline: api/http/route.ts writeRoute). */
  idempotency?: string;
  /** Rebuilds the replayed body from what the write kept, for a write that keeps less than it answers. */
  replay?: (kept: unknown, ctx: OperationContext) => Promise<unknown>;
  /** The funnel step a 2xx answer counts as, by HTTP, MCP or A2A. */
  funnel?: FunnelStep;
  tool?: ToolSurface;
  /** The work, returning the body of the 2xx answer; domain errors become problems at the edge. */
  handle?: (input: OperationInput<z.output<P>, z.output<Q>, z.output<B>>, ctx: OperationContext) => Promise<unknown>;
  /** Or the whole answer, for routes that speak another protocol (MCP, A2A) or read multipart. */
  raw?: (request: RouteRequest, ctx: OperationContext) => Promise<RouteAnswer>;
}

/** Any operation of the table. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperation = Operation<string, any, any, any>;

/** Declares an operation with its handler typed from its schemas. */
export const defineOperation = <
  Id extends string,
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
>(
  op: Operation<Id, P, Q, B>,
): Operation<Id, P, Q, B> => op;

/** The one 2xx status of an operation. */
export function successOf(op: AnyOperation): number {
  const status = Object.keys(op.responses)
    .map(Number)
    .find((s) => s >= 200 && s < 300);
  if (status === undefined) throw new Error(`${op.id} documents no 2xx answer`);
  return status;
}
