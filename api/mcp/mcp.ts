import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { answerOf, header, webRequest, type RouteHandler } from '../http/route.ts';
import { callInput, type Invoke } from '../operations/invoke.ts';
import { TOOL_OPERATIONS } from '../operations/paths.ts';

export interface McpDeps {
  /** Calls a tool's operation through its HTTP handler. */
  invoke: Invoke;
  siteUrl: string;
  name: string;
  version: string;
  /** Browser origins allowed to call /mcp (requests without Origin, as agents send, are allowed). */
  allowedOrigins: string[];
}

const MCP_TOOLS = TOOL_OPERATIONS.filter((op) => op.tool!.mcp);
/** tools/list, made once: the same zod schemas as the HTTP bodies, as JSON Schema. */
const TOOL_LIST = MCP_TOOLS.map((op) => {
  const input = callInput(op);
  return {
    name: op.tool!.name,
    description: op.tool!.description,
    inputSchema: (input
      ? z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' })
      : { type: 'object', properties: {} }) as { type: 'object'; [k: string]: unknown },
  };
});
const TOOL_NAMES = new Set(TOOL_LIST.map((t) => t.name));

/**
 * A stateless Model Context Protocol endpoint (Streamable HTTP, JSON answers). Its tools are the
 * operations the table offers as tools; each call runs the same route handler as its HTTP twin.
 * A stateless server cannot notify, so `listChanged` is false; an unknown tool is the JSON-RPC
 * error -32602 (2025-11-25, server/tools "Error Handling"); a refused call is a tool result with
 * isError and the problem+json body, which the model can read and correct.
 */
export function createMcpRoute(deps: McpDeps): RouteHandler {
  return async (request) => {
    const caller = { client: request.client, userAgent: header(request, 'user-agent') ?? '' };
    const server = new Server(
      { name: deps.name, version: deps.version },
      { capabilities: { tools: { listChanged: false } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOL_LIST }));
    server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
      if (!TOOL_NAMES.has(params.name))
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}. tools/list names every tool.`);
      const answer = (await deps.invoke(params.name, params.arguments ?? {}, caller))!;
      return { content: [{ type: 'text' as const, text: JSON.stringify(answer.body) }], isError: answer.status >= 400 };
    });
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
