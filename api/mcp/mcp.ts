import { AsyncLocalStorage } from 'node:async_hooks';
import {
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { jsonRpcId, jsonRpcTooDeep } from '../http/json-body.ts';
import { answerOf, header, json, webRequest, type RouteHandler } from '../http/route.ts';
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
 * The lists change only with a deploy: a client may keep them for an hour, and a shared cache may too
 * (they name no caller). 2026-07-28 asks for these hints on every cacheable result.
 */
const CACHE_HINT = { ttlMs: 3_600_000, cacheScope: 'public' } as const;
const CACHE_HINTS = {
  'server/discover': CACHE_HINT,
  'tools/list': CACHE_HINT,
  'prompts/list': CACHE_HINT,
  'resources/list': CACHE_HINT,
  'resources/templates/list': CACHE_HINT,
};

type Caller = Parameters<Invoke>[2];

/**
 * A server instance for one request. The low-level Server (not McpServer) because the tools take
 * our own JSON Schemas and refuse through their HTTP handlers: a refused call is a tool result with
 * isError and the problem+json body, which the model can read and correct, not an SDK validation text.
 */
function serverFor(deps: McpDeps, caller: Caller): Server {
  const server = new Server(
    { name: deps.name, version: deps.version },
    {
      capabilities: {
        tools: { listChanged: false },
        prompts: { listChanged: false },
        resources: { listChanged: false, subscribe: false },
      },
      cacheHints: CACHE_HINTS,
    },
  );
  server.setRequestHandler('tools/list', async () => ({ tools: TOOL_LIST }));
  // No prompts and no resources: their lists are empty (and cacheable), as 2026-07-28 clients expect
  // to read them; what an agent reads is behind the tools.
  server.setRequestHandler('prompts/list', async () => ({ prompts: [] }));
  server.setRequestHandler('resources/list', async () => ({ resources: [] }));
  server.setRequestHandler('resources/templates/list', async () => ({ resourceTemplates: [] }));
  server.setRequestHandler('resources/read', async ({ params }) => {
    throw new ResourceNotFoundError(params.uri);
  });
  server.setRequestHandler('tools/call', async ({ params }) => {
    if (!TOOL_NAMES.has(params.name))
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Unknown tool: ${params.name}. tools/list names every tool.`,
      );
    const answer = (await deps.invoke(params.name, params.arguments ?? {}, caller))!;
    return { content: [{ type: 'text' as const, text: JSON.stringify(answer.body) }], isError: answer.status >= 400 };
  });
  return server;
}

/**
 * A stateless Model Context Protocol endpoint (Streamable HTTP, JSON answers) on the v2 SDK. It serves
 * 2026-07-28 requests (each carries its version, client info and capabilities in `_meta`;
 * `server/discover` replaces the handshake) and 2025-era requests (initialize, then stateless calls)
 * from one server factory, so both eras see the same tools. Each tool call runs the same route
 * handler as its HTTP twin. A stateless server cannot notify, so `listChanged` is false; an unknown
 * tool is the JSON-RPC error -32602 (server/tools "Error Handling").
 */
export function createMcpRoute(deps: McpDeps): RouteHandler {
  // The SDK builds a server per request inside fetch(); the request's caller reaches it in this store.
  const callers = new AsyncLocalStorage<Caller>();
  const factory = () => serverFor(deps, callers.getStore()!);
  const modern = createMcpHandler(factory, { legacy: 'reject' });
  // The 2025 leg is the SDK's stateless transport as before, with JSON answers rather than its SSE default.
  const legacy = async (request: Request) => {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const server = factory();
    await server.connect(transport);
    try {
      return await transport.handleRequest(request);
    } finally {
      // A JSON answer is whole once handleRequest resolves: nothing of this request is kept.
      await server.close();
    }
  };
  return async (request) => {
    const refused = refusedOrigin(header(request, 'origin'), deps.allowedOrigins, request.body);
    if (refused) return answerOf(refused);
    // As the transport answers a body that is no JSON-RPC message: 400 with the error.
    const deep = jsonRpcTooDeep(request.body);
    if (deep) return json(400, deep);
    const web = webRequest(request, deps.siteUrl);
    const caller: Caller = { client: request.client };
    const answer = await callers.run(caller, async () =>
      answerOf(await ((await isLegacyRequest(web)) ? legacy(web) : modern.fetch(web))),
    );
    return caller.step ? { ...answer, step: caller.step } : answer;
  };
}

/**
 * A browser Origin that is not ours is refused before the SDK sees the request (DNS-rebinding
 * protection); the error echoes the request's id when the body has one, as every error must.
 */
function refusedOrigin(origin: string | undefined, allowed: string[], body: Uint8Array): Response | undefined {
  if (origin === undefined || allowed.includes(origin)) return undefined;
  return Response.json(
    {
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Forbidden: Origin not allowed' },
      id: jsonRpcId(new TextDecoder().decode(body)),
    },
    { status: 403 },
  );
}
