import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { loadContent, type Content } from './content/load.ts';
import { buildRobots } from './documents/crawl.ts';
import { StartupError } from './startup-error.ts';
import { createAlerts } from './telemetry/alerts/alerts.ts';
import { createRobotsJudge, readRobotsDir } from './telemetry/robots/robots.ts';
import { createWriteLimiter } from './http/rate-limit.ts';
import { openLogSigner } from './omip/signer.ts';
import { createOmip } from './omip/service.ts';
import { funnelStepOf } from './operations/paths.ts';
import { databaseAnswers, folderWritable, storeCeiling, type Metrics, type ReadinessCheck } from './operator/index.ts';
import { NEAR_CEILING, openEmbeddedStore, openMemoryStore, type Store } from './store/index.ts';
import { openPostgresStore } from './store/postgres/postgres-store.ts';
import { createTelemetry, telemetryRulesOf } from './telemetry/telemetry.ts';
import { systemResolver, type Resolver } from './telemetry/verification/verify.ts';
import { httpDirectoryFetcher, type DirectoryFetcher } from './telemetry/web-bot-auth/web-bot-auth.ts';

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
 * The robots.txt rules each crawler's requests are judged by: this process's own robots.txt for
 * live requests and ingested lines of SITE_URL's and CANON_URL's hosts, and the files in
 * ROBOTS_TXT_DIR for other hosts.
 */
async function robotsJudgeOf(own: string | undefined, content: Content, config: Config) {
  const others = config.ROBOTS_TXT_DIR
    ? await readRobotsDir(config.ROBOTS_TXT_DIR).catch((error: Error) => {
        throw new StartupError(`ROBOTS_TXT_DIR: cannot read ${config.ROBOTS_TXT_DIR}: ${error.message}`);
      })
    : new Map<string, string>();
  return createRobotsJudge(own ?? buildRobots(content, { site: config.SITE_URL, canon: config.CANON_URL }), others, [
    new URL(config.SITE_URL).hostname,
    new URL(config.CANON_URL).hostname,
  ]);
}

/**
 * The one composition root of the engine: from configuration, the store, telemetry, omip, the write
 * limiter, idempotency, the operation routes with their views and the MCP and A2A doors, each made
 * once. `api/server.ts` adds HTTP, the build and signals; `npm run dev` and the tests call this too.
 */
export async function createEngine(config: Config, options: EngineOptions) {
  const { logger } = options;
  const content = await loadContent(config.CONTENT_DIR);
  const { store, rateLimitBackend, writable, ceiling } = options.store
    ? { store: options.store }
    : await openStore(config, logger, options.metrics);
  const telemetry = await createTelemetry({
    funnelStepOf,
    ...telemetryRulesOf(content),
    robots: await robotsJudgeOf(options.robotsTxt, content, config),
    resolver: options.resolver ?? systemResolver(config.DNS_SERVERS),
    fetchDirectory:
      options.fetchDirectory ?? httpDirectoryFetcher({ allowLoopback: config.WEB_BOT_AUTH_ALLOW_LOOPBACK }),
    store: store.telemetry,
    logger,
    flushMs: config.TELEMETRY_FLUSH_MS,
    retention: { hours: config.LEDGER_HOURS, days: config.LEDGER_DAYS },
    alerts: createAlerts({
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
    signer: await openLogSigner(config.DATA_DIR === ':memory:' ? null : config.DATA_DIR, config.LOG_SIGNING_KEY_FILE),
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
  const app = createApp({
    store,
    telemetry,
    omip,
    content,
    links,
    logger,
    limiter,
    ingestToken: config.INGEST_TOKEN,
    ingestWorkers: config.INGEST_WORKERS,
  });
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
      await telemetry.close();
      await store.close();
    },
  };
}
export type Engine = Awaited<ReturnType<typeof createEngine>>;
