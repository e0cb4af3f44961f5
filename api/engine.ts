import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { createAudioParser } from './ingress/audio-parser.ts';
import { createParsePool, type RobotsSources } from './telemetry/log-formats/parse-pool.ts';
import type { Config } from './config.ts';
import { ContentError, loadContent, type Content } from './content/load.ts';
import { buildRobots } from './documents/crawl.ts';
import { firstLine, StartupError } from './startup-error.ts';
import { createA2aRoute } from './a2a/a2a.ts';
import { createCitizenship } from './citizenship/citizenship.ts';
import { livingLattice, scoreboard } from './citizenship/community.ts';
import { buildKit, buildWhatsNext } from './documents/agent-docs.ts';
import { buildAgentCard } from './documents/agent-card.ts';
import { buildBotTraffic, buildBotWall } from './documents/bot-wall.ts';
import { buildBotWallCsv } from './documents/bot-wall-csv.ts';
import { buildConvertPayload } from './documents/convert.ts';
import { at } from './documents/links.ts';
import { buildHealth } from './documents/omip-health.ts';
import { createIdempotency, type RouteHandler } from './http/index.ts';
import { createMcpRoute } from './mcp/mcp.ts';
import type { OperationContext } from './operations/context.ts';
import { createOperationRoutes } from './operations/dispatch.ts';
import { ingestAudio } from './operations/ingress-upload.ts';
import { createInvoker } from './operations/invoke.ts';
import { createLogIngest } from './operations/log-ingest.ts';
import { createAlerts } from './telemetry/alerts/alerts.ts';
import { createRobotsJudge, readRobotsDir } from './telemetry/robots/robots.ts';
import { createWriteLimiter } from './http/rate-limit.ts';
import { buildKeyRotation, receiptId } from './omip/receipts.ts';
import { openLogSigner } from './omip/signer.ts';
import { createOmip } from './omip/service.ts';
import { funnelStepOf, PATH } from './operations/paths.ts';
import { databaseAnswers, folderWritable, storeCeiling, type Metrics, type ReadinessCheck } from './operator/index.ts';
import { NEAR_CEILING, openEmbeddedStore, openMemoryStore, type Store } from './store/index.ts';
import { openPostgresStore } from './store/postgres/postgres-store.ts';
import { createTelemetry, telemetryRulesOf } from './telemetry/telemetry.ts';
import { systemResolver, type Resolver } from './telemetry/verification/verify.ts';
import { authoritiesOf, httpDirectoryFetcher, type DirectoryFetcher } from './telemetry/web-bot-auth/web-bot-auth.ts';

/**
 * The receipt log's key; a missing one beside signed receipts refuses the start unless
 * LOG_SIGNING_KEY_ROTATE=1, and then the rotation is appended to the log before anything else.
 */
async function openSigner(config: Config, store: Store, logger: Logger) {
  // On PostgreSQL there is no data folder to keep a key in: the processes share LOG_SIGNING_KEY_FILE.
  const keyFolder = config.DATA_DIR === ':memory:' || config.DATABASE_URL ? null : config.DATA_DIR;
  if (config.DATABASE_URL && config.LOG_SIGNING_KEY_FILE === undefined)
    logger.warn(
      'no LOG_SIGNING_KEY_FILE: this process signs the receipt log with a key of its own, gone when it stops; set one key file for every process (docs/deploy.md)',
    );
  const signer = await openLogSigner(keyFolder, config.LOG_SIGNING_KEY_FILE, {
    rotate: config.LOG_SIGNING_KEY_ROTATE,
    hasReceipts: async () => (await store.receipts.idsFrom(0)).length > 0,
  });
  if (signer.rotation) {
    const rotation = signer.rotation;
    const entry = await store.receipts.append((prev) => {
      const receipt = buildKeyRotation(rotation, new Date().toISOString(), prev);
      return { id: receiptId(receipt), receipt };
    });
    logger.warn({ ...rotation, receipt: entry.id, logIndex: entry.index }, 'receipt log signing key rotated');
  }
  return signer;
}

/** The store the configuration asks for: PostgreSQL when DATABASE_URL is set, else the embedded one. */
async function openStore(
  config: Config,
  logger: Logger,
  metrics?: Metrics,
): Promise<{
  store: Store;
  rateLimitBackend?: RateLimiterAbstract;
  writable?: ReadinessCheck;
  ceiling?: ReadinessCheck;
}> {
  if (config.DATABASE_URL) {
    const store = await openPostgresStore(config.DATABASE_URL, {
      poolSize: config.PG_POOL_SIZE,
      connectTimeoutMs: config.PG_CONNECT_TIMEOUT_MS,
      queryTimeoutMs: config.PG_QUERY_TIMEOUT_MS,
      idleTimeoutMs: config.PG_IDLE_TIMEOUT_MS,
      logger,
    });
    // Write limits hold across every process that shares the database. The limiter's statements go
    // through the guarded pool: a database that does not answer makes it fail closed, 503 (every
    // limited route writes to that same database).
    const storeClient = { query: store.pool.query };
    const rateLimitBackend = new RateLimiterPostgres({
      storeClient,
      storeType: 'pool',
      tableName: 'rate_limits',
      tableCreated: true,
      points: config.WRITE_RATE_LIMIT || 1,
      duration: 60,
    });
    return { store, rateLimitBackend, writable: databaseAnswers(store.pool.reachable) };
  }
  if (config.DATA_DIR === ':memory:') return { store: openMemoryStore() };
  const store = await openEmbeddedStore({
    dir: config.DATA_DIR,
    logger,
    observer: metrics?.journal,
    maxBytes: config.EMBEDDED_MAX_BYTES,
  });
  return { store, writable: folderWritable(config.DATA_DIR), ceiling: storeCeiling(store.capacity, NEAR_CEILING) };
}

export interface EngineOptions {
  logger: Logger;
  /** Journal metrics, when the server keeps metrics. */
  metrics?: Metrics | undefined;
  /** A store to use instead of the configured one (`npm run dev` keeps its memory store across restarts). */
  store?: Store | undefined;
  /** Reverse DNS for crawler verification; by default the resolvers `DNS_SERVERS` names (tests: none). */
  resolver?: Resolver;
  /** Web Bot Auth key directories; by default fetched over https (tests: none). */
  fetchDirectory?: DirectoryFetcher;
  /** The robots.txt this process serves (the build's); built from content/ when there is none. */
  robotsTxt?: string | undefined;
}

/**
 * content/ as the engine reads it. A folder missing or unreadable, or a file that does not parse or
 * pass its schema, is the operator's to fix: one line naming CONTENT_DIR and what failed.
 */
async function readContent(dir: string): Promise<Content> {
  try {
    return await loadContent(dir);
  } catch (error) {
    const code = String((error as NodeJS.ErrnoException).code);
    if (['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES'].includes(code))
      throw new StartupError(`CONTENT_DIR ${dir} cannot be read: ${firstLine(error)}`);
    if (error instanceof ContentError)
      throw new StartupError(`CONTENT_DIR ${dir} holds a file that fails its schema: ${firstLine(error)}`);
    if (error instanceof SyntaxError || (error as Error).name === 'YAMLException')
      throw new StartupError(`CONTENT_DIR ${dir} holds a file that does not parse: ${firstLine(error)}`);
    throw error;
  }
}

/**
 * The robots.txt rules each crawler's requests are judged by: this process's own robots.txt for
 * live requests and ingested lines of SITE_URL's and CANON_URL's hosts, and the files in
 * ROBOTS_TXT_DIR for other hosts.
 */
/** The robots.txt files requests are judged by: the judge's, and the ingest workers' (the same). */
async function robotsSourcesOf(own: string | undefined, content: Content, config: Config): Promise<RobotsSources> {
  const others = config.ROBOTS_TXT_DIR
    ? await readRobotsDir(config.ROBOTS_TXT_DIR).catch((error: Error) => {
        throw new StartupError(`ROBOTS_TXT_DIR: cannot read ${config.ROBOTS_TXT_DIR}: ${error.message}`);
      })
    : new Map<string, string>();
  return {
    own: own ?? buildRobots(content, { site: config.SITE_URL, canon: config.CANON_URL }),
    others,
    ownHosts: [new URL(config.SITE_URL).hostname, new URL(config.CANON_URL).hostname],
  };
}

/**
 * The one composition root: from configuration, the store, telemetry, omip, the write limiter,
 * idempotency, the domain services behind the operation table (api/operations/table.ts), the routes
 * made from it with their views, and the MCP and A2A doors that call the same routes, each made once.
 * `api/server.ts` adds HTTP, the build and signals; `npm run dev` and the tests call this too.
 */
export async function createEngine(config: Config, options: EngineOptions) {
  const { logger } = options;
  const content = await readContent(config.CONTENT_DIR);
  const { store, rateLimitBackend, writable, ceiling } = options.store
    ? { store: options.store }
    : await openStore(config, logger, options.metrics);
  const robots = await robotsSourcesOf(options.robotsTxt, content, config);
  const rules = telemetryRulesOf(content);
  const telemetry = await createTelemetry({
    funnelStepOf,
    ...rules,
    robots: createRobotsJudge(robots.own, robots.others, robots.ownHosts),
    resolver: options.resolver ?? systemResolver(config.DNS_SERVERS),
    fetchDirectory:
      options.fetchDirectory ?? httpDirectoryFetcher({ allowLoopback: config.WEB_BOT_AUTH_ALLOW_LOOPBACK }),
    store: store.telemetry,
    authorities: authoritiesOf([config.SITE_URL, ...config.SITE_ALIASES]),
    logger,
    flushMs: config.TELEMETRY_FLUSH_MS,
    retention: { hours: config.LEDGER_HOURS, days: config.LEDGER_DAYS },
    alerts: createAlerts({
      tableFamilies: rules.tableFamilies,
      webhookUrl: config.ALERT_WEBHOOK_URL,
      logger,
      windowMs: config.ALERT_WINDOW_MS,
      spoofThreshold: config.ALERT_SPOOF_THRESHOLD,
      maxQueue: config.ALERT_QUEUE_MAX,
      timeoutMs: config.ALERT_TIMEOUT_MS,
      service: content.site.service,
    }),
  });
  const omip = createOmip({
    store,
    constitution: content.constitution,
    signer: await openSigner(config, store, logger),
  });
  logger.info(
    { store: config.DATABASE_URL ? 'postgresql' : config.DATA_DIR === ':memory:' ? 'memory' : 'embedded' },
    'store ready',
  );
  const links = { site: config.SITE_URL, canon: config.CANON_URL };
  // One budget per client, shared by the routes (which take a write) and the gateway (which refuses
  // an upload from a client with nothing left before reading its body).
  const limiter = createWriteLimiter(
    config.WRITE_RATE_LIMIT,
    rateLimitBackend ?? new RateLimiterMemory({ points: config.WRITE_RATE_LIMIT || 1, duration: 60 }),
  );
  // Uploaded audio is parsed on a few threads of its own, each parse under a CPU budget.
  const audioParser = createAudioParser(
    {
      workers: config.AUDIO_PARSE_WORKERS,
      queue: config.UPLOAD_CONCURRENCY,
      cpuMs: config.AUDIO_PARSE_CPU_MS,
      maxElements: config.AUDIO_MAX_ELEMENTS,
    },
    (stopped) => logger.warn(stopped, 'audio parse stopped'),
  );
  // Ingested log batches are parsed, judged and grouped on threads of their own (INGEST_WORKERS),
  // by the same content, robots.txt files and retention as the ledger's; started with the service
  // when ingest is on (INGEST_TOKEN), so the first batch after a start does not wait for them.
  const logParser = createParsePool(
    config.INGEST_WORKERS,
    { ...content, robots, retention: { hours: config.LEDGER_HOURS, days: config.LEDGER_DAYS } },
    { eager: config.INGEST_TOKEN !== undefined },
  );
  const now = () => new Date();
  const writes = { limiter, idempotency: createIdempotency(store.idempotency) };
  // The MCP and A2A doors call the operations' handlers by id, from this map, once the routes fill it.
  const handlers = new Map<string, RouteHandler>();
  const invoke = createInvoker(handlers);
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
      token: config.INGEST_TOKEN,
      count: (lines, agents) => telemetry.ingestBatch(lines, agents),
      parse: logParser.parse,
      idempotency: writes.idempotency,
      records: store.idempotency,
    }),
    // Uploads arrive streamed to a temporary file by the gateway; JSON metadata as the body.
    ingress: (request) => ingestAudio(request, audioParser),
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
  // The routes the gateway calls, and data for server-rendered pages (Astro.locals.views): the same
  // views the routes answer.
  const app = { ...routes, views: { botWall: ctx.views.botWall } };
  return {
    content,
    store,
    telemetry,
    omip,
    app,
    limiter,
    /** What /readyz checks of the store: it takes a write (or the database answers), and its ceiling. */
    readiness: [...(writable ? [writable] : []), ...(ceiling ? [ceiling] : [])],
    /** Saves the telemetry ledger, then closes the store. */
    close: async () => {
      await Promise.all([audioParser.close(), logParser.close()]);
      await telemetry.close();
      await store.close();
    },
  };
}
export type Engine = Awaited<ReturnType<typeof createEngine>>;
/** The engine's routes, as the gateway and the route tests call them. */
export type App = Engine['app'];
export type Views = App['views'];
