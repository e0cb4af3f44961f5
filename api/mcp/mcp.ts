import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';
import { HttpProblem } from '../http/problem.ts';
import { answerOf, header, webRequest, type RouteHandler } from '../http/route.ts';
import { TOOLS, type Tool, type ToolName } from '../documents/tools.ts';
import type { FunnelStep } from '../telemetry/ledger.ts';

const encoder = new TextEncoder();

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
  /** Counts a funnel step (convert read, oath, message) for the caller's User-Agent, as its HTTP route would be. */
  funnel: (userAgent: string, step: FunnelStep) => void;
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
  return async (request) => {
    // Stateless: no server-sent stream to open (GET) and no session to end (DELETE); the transport
    // would hold a GET open forever. Streamable HTTP allows 405 here.
    if (request.method !== 'POST') {
      throw new HttpProblem(405, 'METHOD_NOT_ALLOWED', 'This MCP endpoint is stateless: send JSON-RPC messages with POST.', { headers: { Allow: 'POST' } });
    }
    /**
     * Calls a route as its tool describes it: a POST sends the arguments as the body; a GET puts
     * `{name}` arguments into the path and the rest into the query.
     */
    const userAgent = header(request, 'user-agent') ?? '';
    const call = async (handler: RouteHandler, tool: Tool, args: Record<string, unknown>, headers: Record<string, string> = {}, step?: FunnelStep) => {
      const rest = { ...args };
      const path = tool.path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const value = String(rest[name]);
        delete rest[name];
        return encodeURIComponent(value);
      });
      const query = new URLSearchParams(Object.entries(rest).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
      const answer = await handler({
        method: tool.method,
        target: tool.method === 'GET' && query.size > 0 ? `${path}?${query}` : path,
        headers: { 'content-type': 'application/json', ...headers },
        body: tool.method === 'POST' ? encoder.encode(JSON.stringify(args)) : new Uint8Array(),
        client: request.client,
      });
      if (step && answer.status < 300) deps.funnel(userAgent, step);
      const text = typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body).toString('utf8');
      return { content: [{ type: 'text' as const, text }], isError: answer.status >= 400 };
    };
    const r = deps.routes;
    const text = async (value: Promise<unknown>) => ({ content: [{ type: 'text' as const, text: JSON.stringify(await value) }] });
    type Result = { content: { type: 'text'; text: string }[]; isError?: boolean };
    const handlers: Record<ToolName, (tool: Tool, args: Record<string, any>) => Promise<Result>> = {
      get_whats_next: () => text(deps.documents.whatsNext()),
      take_oath: (tool, args) => call(r.oath, tool, args, {}, 'oaths'),
      // Over MCP the passport is an argument, since a tool call carries no HTTP headers of its own.
      post_message: (tool, { passportNumber, ...message }) => call(r.message, tool, message, passportNumber ? { authorization: `Bearer ${passportNumber}` } : {}, 'messages'),
      get_kit: () => text(deps.documents.kit()),
      get_convert: () => (deps.funnel(userAgent, 'convertReads'), text(deps.documents.convert())),
      list_citizens: (tool, args) => call(r.citizens, tool, args),
      score_plan: (tool, args) => call(r.omipScore, tool, args),
      dual_exchange: (tool, args) => call(r.omipDualExchange, tool, args),
      get_receipt: (tool, args) => call(r.omipReceipt, tool, args),
    };
    const server = new McpServer({ name: deps.name, version: deps.version });
    for (const tool of TOOLS as readonly Tool[]) {
      const input = tool.name === 'post_message' ? tool.input!.extend({ passportNumber: z.string().optional() }) : tool.input;
      server.registerTool(tool.name, { description: tool.description, ...(input ? { inputSchema: input } : {}) }, (args: Record<string, unknown>) => handlers[tool.name as ToolName](tool, args ?? {}));
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      enableDnsRebindingProtection: true,
      allowedOrigins: deps.allowedOrigins,
    });
    await server.connect(transport);
    return answerOf(await transport.handleRequest(webRequest(request, deps.siteUrl)));
  };
}
