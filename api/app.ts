import type { Logger } from 'pino';
import { createA2aRoute } from './a2a/a2a.ts';
import { createCitizenship } from './citizenship/citizenship.ts';
import { livingLattice, scoreboard } from './citizenship/community.ts';
import type { Content } from './content/load.ts';
import { buildKit, buildWhatsNext } from './documents/agent-docs.ts';
import { buildAgentCard } from './documents/agent-card.ts';
import { buildConvertPayload } from './documents/convert.ts';
import { at, type Links } from './documents/links.ts';
import { createIdempotency, type RouteHandler, type WriteLimiter } from './http/index.ts';
import { ingestAudio } from './operations/ingress-upload.ts';
import { createMcpRoute } from './mcp/mcp.ts';
import { buildHealth } from './documents/omip-health.ts';
import type { Omip } from './omip/service.ts';
import type { OperationContext } from './operations/context.ts';
import { createOperationRoutes } from './operations/dispatch.ts';
import { createInvoker } from './operations/invoke.ts';
import { PATH } from './operations/paths.ts';
import type { Store } from './store/types.ts';
import { buildBotTraffic, buildBotWall } from './documents/bot-wall.ts';
import { buildBotWallCsv } from './documents/bot-wall-csv.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import { createLogIngest } from './operations/log-ingest.ts';
import { createParsePool } from './telemetry/log-formats/parse-pool.ts';

export interface AppDeps {
  store: Store;
  telemetry: Telemetry;
  omip: Omip;
  content: Content;
  links: Links;
  logger: Logger;
  /** The write budget per client, shared with the gateway (which refuses an upload from a client with nothing left). */
  limiter: WriteLimiter;
  /** Token of the log-ingest route; the route answers 404 without one. */
  ingestToken?: string | undefined;
  /** Worker threads that read ingested log batches (INGEST_WORKERS); 0 reads them in the gateway's thread. */
  ingestWorkers?: number;
}

/**
 * The engine: the domain services behind the operation table (api/operations/table.ts), the
 * routes made from it, and the MCP and A2A doors that call the same routes.
 */
export function createApp(deps: AppDeps) {
  const { store, telemetry, logger, omip, content, links } = deps;
  const now = () => new Date();
  const writes = { limiter: deps.limiter, idempotency: createIdempotency(store.idempotency) };
  // The MCP and A2A doors call the operations' handlers by id, from this map, once the routes fill it.
  const handlers = new Map<string, RouteHandler>();
  const invoke = createInvoker(handlers, (userAgent, step) => telemetry.step(userAgent, step));
  const ctx: OperationContext = {
    citizenship: createCitizenship(store, {
      postMessage: at(links.site, PATH.postMessage),
      listCitizens: at(links.site, PATH.listCitizens),
    }),
    omip,
    views: {
      scoreboard: async () => scoreboard(store, await telemetry.combined(), now()),
      livingLattice: async () => livingLattice(store, await telemetry.combined(), now()),
      botTraffic: async () => buildBotTraffic(content, await telemetry.combined(), now()),
      botWall: async () => buildBotWall(content, await telemetry.combined(), links, now()),
      botWallCsv: async (range) => buildBotWallCsv(await telemetry.combined(), range, now()),
      health: async () => buildHealth(content, links, await omip.driftMetrics(), omip.primitives().length),
    },
    documents: {
      convert: async () => buildConvertPayload(content, links),
      kit: async () => buildKit(content, links),
      whatsNext: async () => buildWhatsNext(content, links),
    },
    ingestLogs: createLogIngest({
      token: deps.ingestToken,
      count: (lines, agents) => telemetry.ingestBatch(lines, agents),
      parse: createParsePool(deps.ingestWorkers ?? 0, content).parse,
      idempotency: writes.idempotency,
      records: store.idempotency,
    }),
    // Uploads arrive streamed to a temporary file by the gateway; JSON metadata as the body.
    ingress: (request) => ingestAudio(request),
    mcp: createMcpRoute({
      invoke,
      siteUrl: links.site,
      name: content.site.name,
      version: content.site.versionDate,
      allowedOrigins: [new URL(links.site).origin, new URL(links.canon).origin],
    }),
    a2a: createA2aRoute({ invoke, card: buildAgentCard(content, links), links }),
  };
  const routes = createOperationRoutes(ctx, writes, logger, handlers);
  // Data for server-rendered pages (Astro.locals.views): the same views the routes answer.
  return { ...routes, views: { botWall: ctx.views.botWall } };
}
export type App = ReturnType<typeof createApp>;

export type Views = App['views'];
