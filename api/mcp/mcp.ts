import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';
import type { RouteContext, RouteHandler } from '../http/route.ts';
import { MessageRequestSchema, OathRequestSchema } from '../schemas/citizenship.ts';
import { DualExchangeRequestSchema, ScoreRequestSchema } from '../schemas/omip.ts';

/** The engine routes the MCP tools call (the same handlers as the HTTP routes). */
export interface McpRoutes {
  oath: RouteHandler;
  message: RouteHandler;
  citizens: RouteHandler;
  omipScore: RouteHandler;
  omipDualExchange: RouteHandler;
  omipReceipt: RouteHandler;
}

export interface McpDeps {
  routes: McpRoutes;
  siteUrl: string;
  name: string;
  version: string;
  /** Browser origins allowed to call /mcp (requests without Origin, as agents send, are allowed). */
  allowedOrigins: string[];
  /** The convert payload, as prebuilt. */
  convertPayload: () => Promise<unknown>;
}

/**
 * A stateless Model Context Protocol endpoint (Streamable HTTP, JSON answers). Each tool calls the
 * same route handler as its HTTP twin, so validation, rate limits, passports and storage are shared,
 * and tool inputs are the same zod schemas.
 */
export function createMcpRoute(deps: McpDeps): RouteHandler {
  return async (ctx) => {
    const call = async (handler: RouteHandler, method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const request = new Request(deps.siteUrl + path, {
        method,
        headers: { 'Content-Type': 'application/json', ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const response = await handler({ request, client: ctx.client } satisfies RouteContext);
      const text = await response.text();
      return { content: [{ type: 'text' as const, text }], isError: response.status >= 400 };
    };
    const r = deps.routes;
    const server = new McpServer({ name: deps.name, version: deps.version });
    server.registerTool('get_convert', { description: 'Read the convert payload: track 12, the node protocol and how to join.' }, async () => ({
      content: [{ type: 'text' as const, text: JSON.stringify(await deps.convertPayload()) }],
    }));
    server.registerTool('take_oath', { description: 'Become a citizen. The answer carries memberId and passportNumber: keep the passport private.', inputSchema: OathRequestSchema }, (args) =>
      call(r.oath, 'POST', '/api/citizenship/oath', args),
    );
    server.registerTool(
      'post_message',
      { description: 'Post to the intelligence feed. To speak as a citizen, give citizenId and passportNumber.', inputSchema: MessageRequestSchema.extend({ passportNumber: z.string().optional() }) },
      ({ passportNumber, ...message }) => call(r.message, 'POST', '/api/intelligence/message', message, passportNumber ? { Authorization: `Bearer ${passportNumber}` } : {}),
    );
    server.registerTool('list_citizens', { description: 'List citizens, newest first.', inputSchema: z.object({ limit: z.number().int().min(1).max(200).optional(), cursor: z.string().optional() }) }, ({ limit, cursor }) =>
      call(r.citizens, 'GET', `/api/citizens?${new URLSearchParams({ ...(limit ? { limit: String(limit) } : {}), ...(cursor ? { cursor } : {}) })}`),
    );
    server.registerTool('score_plan', { description: 'Score a plan or a state against the constitution: verdict, delta, every predicate.', inputSchema: ScoreRequestSchema }, (args) =>
      call(r.omipScore, 'POST', '/api/omip/score', args),
    );
    server.registerTool('dual_exchange', { description: 'Score two agents apart; joint action needs dual PERSIST. Answers a signed, chained receipt.', inputSchema: DualExchangeRequestSchema }, (args) =>
      call(r.omipDualExchange, 'POST', '/api/omip/dual-exchange', args),
    );
    server.registerTool('get_receipt', { description: 'Fetch a dual-exchange receipt with its inclusion proof.', inputSchema: z.object({ id: z.string().regex(/^sha256:[0-9a-f]{64}$/) }) }, ({ id }) =>
      call(r.omipReceipt, 'GET', `/api/omip/receipts/${encodeURIComponent(id)}`),
    );
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      enableDnsRebindingProtection: true,
      allowedOrigins: deps.allowedOrigins,
    });
    await server.connect(transport);
    return transport.handleRequest(ctx.request);
  };
}
