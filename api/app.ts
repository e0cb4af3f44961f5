import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { createCitizenship } from './citizenship/citizenship.ts';
import { livingLattice, scoreboard } from './citizenship/community.ts';
import type { Content } from './content/load.ts';
import { buildKit, buildWhatsNext } from './documents/agent-docs.ts';
import { buildConvertPayload } from './documents/convert.ts';
import type { Links } from './documents/links.ts';
import { createIdempotency, createWriteLimiter, exampleOf, getOnly, guard, header, HttpProblem, json, pageQuery, pathOf, postOnly, queryOf, readAnswer, webRequest, writeRoute, type RouteHandler, type RouteRequest } from './http/index.ts';
import { ingestAudio } from './ingress/ingress.ts';
import { createMcpRoute } from './mcp/mcp.ts';
import { buildHealth } from './omip/health.ts';
import type { Omip } from './omip/service.ts';
import { MessageRequestSchema, OathRequestSchema } from './schemas/citizenship.ts';
import { CdnLogBatchSchema } from './schemas/ingest.ts';
import { IngressMetadataSchema } from './schemas/ingress.ts';
import { DualExchangeRequestSchema, FingerprintRequestSchema, ScoreRequestSchema } from './schemas/omip.ts';
import type { Store } from './store/types.ts';
import { buildBotTraffic, buildBotWall } from './telemetry/documents.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import { createLogIngest } from './telemetry/log-formats/ingest.ts';

export interface AppDeps {
  store: Store;
  telemetry: Telemetry;
  omip: Omip;
  content: Content;
  links: Links;
  logger: Logger;
  writeRateLimit: number;
  /** Where write limits are kept (PostgreSQL when processes share a database); memory when left out. */
  rateLimitBackend?: RateLimiterAbstract | undefined;
  /** Token of the log-ingest route; the route answers 404 without one. */
  ingestToken?: string | undefined;
}

const created = (body: unknown) => ({ status: 201, body });
const ok = (body: unknown) => ({ status: 200, body });

/** The last path segment, decoded: the :id of /api/omip/receipts/:id. */
function lastSegment(request: RouteRequest): string {
  try {
    return decodeURIComponent(pathOf(request).split('/').at(-1) ?? '');
  } catch {
    throw new HttpProblem(400, 'BAD_PATH', 'The receipt id cannot be decoded.');
  }
}

function firstSize(request: RouteRequest): number | null {
  const raw = queryOf(request).get('first');
  if (raw === null) return null;
  if (!/^\d{1,12}$/.test(raw)) throw new HttpProblem(400, 'INVALID_QUERY', 'first must be a whole number.');
  return Number(raw);
}

/** Every on-demand route, framework-free: Astro's pages only hand requests to these. */
export function createRoutes(deps: AppDeps) {
  const { store, telemetry, logger, omip, content, links } = deps;
  const citizenship = createCitizenship(store, deps.links.site);
  const writes = { limiter: createWriteLimiter(deps.writeRateLimit, deps.rateLimitBackend), idempotency: createIdempotency(store.idempotency) };
  const read = (answer: (request: RouteRequest) => Promise<unknown>): RouteHandler => getOnly(async (request) => readAnswer(request, await answer(request)));

  const routes = {
    oath: writeRoute('oath', OathRequestSchema, writes, (input) => citizenship.takeOath(input)),
    message: writeRoute('message', MessageRequestSchema, writes, (input, request) => citizenship.postMessage(input, header(request, 'authorization') ?? null)),
    citizens: read((request) => citizenship.citizens(pageQuery(request))),
    feed: read((request) => citizenship.feed(pageQuery(request))),
    scoreboard: read(async () => scoreboard(store, await telemetry.combined(), new Date())),
    livingLattice: read(async () => livingLattice(store, await telemetry.combined(), new Date())),
    botTraffic: read(async () => buildBotTraffic(content, await telemetry.combined(), new Date())),
    botWall: read(async () => buildBotWall(content, await telemetry.combined(), links, new Date())),
    telemetryIngest: postOnly(exampleOf(CdnLogBatchSchema), createLogIngest({ token: deps.ingestToken, count: (lines) => telemetry.ingest(lines), idempotency: writes.idempotency })),
    ingressAudio: postOnly(exampleOf(IngressMetadataSchema), async (request) => {
      const rate = await writes.limiter.take(request.client);
      // Multipart bodies are read by the WHATWG FormData parser.
      return json(201, await ingestAudio(webRequest(request, links.site)), rate);
    }),
    omipScore: writeRoute('omip.score', ScoreRequestSchema, writes, async (input) => ok(await omip.score(input))),
    omipProject: writeRoute('omip.project', ScoreRequestSchema, writes, async (input) => ok(await omip.project(input))),
    omipFingerprint: writeRoute('omip.fingerprint', FingerprintRequestSchema, writes, async (input) => ok(omip.fingerprint(input.document))),
    omipDualExchange: writeRoute('omip.dual-exchange', DualExchangeRequestSchema, writes, async (input) => created(await omip.dualExchange(input))),
    omipReceipts: read((request) => omip.receipts(pageQuery(request))),
    omipReceipt: read((request) => omip.receipt(lastSegment(request))),
    omipLog: read((request) => omip.log(firstSize(request))),
    omipHealth: read(async () => buildHealth(content, links, await omip.driftMetrics(), omip.primitives().length)),
    omipDrift: read(() => omip.driftMetrics()),
  } satisfies Record<string, RouteHandler>;

  const guarded = Object.fromEntries(Object.entries(routes).map(([name, handler]) => [name, guard(handler, logger)])) as typeof routes;
  const mcp = createMcpRoute({
    routes: guarded,
    siteUrl: links.site,
    name: content.site.name,
    version: content.site.versionDate,
    allowedOrigins: [new URL(links.site).origin, new URL(links.canon).origin],
    funnel: (userAgent, step) => telemetry.step(userAgent, step),
    documents: { convert: async () => buildConvertPayload(content, links), kit: async () => buildKit(content, links), whatsNext: async () => buildWhatsNext(content, links) },
  });
  return { ...guarded, mcp: guard(mcp, logger) };
}
export type Routes = ReturnType<typeof createRoutes>;
export type RouteName = keyof Routes;

/** Data for server-rendered pages. */
export function createViews(deps: Pick<AppDeps, 'telemetry' | 'content' | 'links'>) {
  return { botWall: async () => buildBotWall(deps.content, await deps.telemetry.combined(), deps.links, new Date()) };
}
export type Views = ReturnType<typeof createViews>;
