import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';
import type { RouteContext, RouteHandler } from '../http/route.ts';
import { TOOLS, type Tool, type ToolName } from '../documents/tools.ts';

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
  /** Documents some tools read. */
  documents: { convert: () => Promise<unknown>; kit: () => Promise<unknown>; whatsNext: () => Promise<unknown> };
}

/**
 * A stateless Model Context Protocol endpoint (Streamable HTTP, JSON answers) whose tools are the
 * tool registry (api/documents/tools.ts). Each tool calls the same route handler as its HTTP twin,
 * so validation, rate limits, passports and storage are shared, and tool inputs are the same zod
 * schemas.
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
    const text = async (value: Promise<unknown>) => ({ content: [{ type: 'text' as const, text: JSON.stringify(await value) }] });
    const handlers: Record<ToolName, (args: Record<string, any>) => Promise<{ content: { type: 'text'; text: string }[]; isError?: boolean }>> = {
      get_whats_next: () => text(deps.documents.whatsNext()),
      take_oath: (args) => call(r.oath, 'POST', '/api/citizenship/oath', args),
      post_message: ({ passportNumber, ...message }) => call(r.message, 'POST', '/api/intelligence/message', message, passportNumber ? { Authorization: `Bearer ${passportNumber}` } : {}),
      get_kit: () => text(deps.documents.kit()),
      get_convert: () => text(deps.documents.convert()),
      list_citizens: ({ limit, cursor }) => call(r.citizens, 'GET', `/api/citizens?${new URLSearchParams({ ...(limit ? { limit: String(limit) } : {}), ...(cursor ? { cursor } : {}) })}`),
      score_plan: (args) => call(r.omipScore, 'POST', '/api/omip/score', args),
      dual_exchange: (args) => call(r.omipDualExchange, 'POST', '/api/omip/dual-exchange', args),
      get_receipt: ({ id }) => call(r.omipReceipt, 'GET', `/api/omip/receipts/${encodeURIComponent(id)}`),
    };
    const server = new McpServer({ name: deps.name, version: deps.version });
    for (const tool of TOOLS as readonly Tool[]) {
      // Over MCP the passport is an argument, since a tool call carries no HTTP headers of its own.
      const input = tool.name === 'post_message' ? tool.input!.extend({ passportNumber: z.string().optional() }) : tool.input;
      server.registerTool(tool.name, { description: tool.description, ...(input ? { inputSchema: input } : {}) }, (args: Record<string, unknown>) => handlers[tool.name as ToolName](args ?? {}));
    }
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
