import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from './config.ts';
import { INGRESS_MEDIA_TYPES, isUploadType } from './ingress/ingress.ts';
import { ABANDONED_AFTER_MS, createGateway, refuseConnect, sweepAbandonedUploads, jsonBody, loadStaticSite, uploadBody, type BodyPolicy, type ObservedRequest, type RenderHandler, type StaticFile } from './gateway/index.ts';
import { createLogging, type Logger, type LogSink } from './log.ts';
import { createApp, createViews } from './app.ts';
import { createTelemetry, telemetryRulesOf } from './telemetry/telemetry.ts';
import { systemResolver } from './telemetry/verify.ts';
import { httpDirectoryFetcher } from './telemetry/web-bot-auth.ts';
import { createOmip } from './omip/service.ts';
import { bodyLimitOf } from './operations/paths.ts';
import { openLogSigner } from './omip/signer.ts';
import { loadContent } from './content/load.ts';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { createWriteLimiter } from './http/rate-limit.ts';
import { NEAR_CEILING, openEmbeddedStore, openMemoryStore, type Store } from './store/index.ts';
import { openPostgresStore } from './store/postgres/postgres-store.ts';
import { logBatchBody } from './telemetry/log-formats/ingest.ts';
import { condition, createMetrics, createReadiness, databaseAnswers, folderWritable, livez, storeCeiling, metricsRoute, operationNamer, readyz, startMetricsServer, type Metrics, type ReadinessCheck } from './ops/index.ts';
import type { RouteHandler } from './http/route.ts';
import type { Lookup } from './operations/dispatch.ts';

export interface RunningServer {
  server: Server;
  url: string;
  logger: Logger;
  /** Stops accepting, finishes requests in flight, flushes, and resolves. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Extra observer of finished requests (tests use it to prove one call per request). */
  observe?: (request: ObservedRequest) => void;
  logDestination?: LogSink;
  /** Pages and documents from elsewhere than the build (`npm run dev`: Astro's dev server). */
  site?: Site;
  /** A store to use instead of the configured one (`npm run dev` keeps its memory store across restarts). */
  store?: Store;
}

/** What serves pages and documents: the build's files and renderer, or Astro's dev server. */
export interface Site {
  files: Map<string, StaticFile>;
  render: RenderHandler;
  notFoundPage?: StaticFile | undefined;
  /** True when the renderer also answers documents under /api/ (Astro's dev server). */
  renderApi?: boolean;
}

/** The build: prebuilt files in memory and Astro's handler for on-demand pages. */
async function loadBuild(config: Config, logger: Logger): Promise<Site> {
  ensureBuild(config, logger);
  const entry = (await import(pathToFileURL(join(config.DIST_DIR, 'server', 'entry.mjs')).href)) as { handler: RenderHandler };
  const manifest = JSON.parse(readFileSync(join(config.DIST_DIR, 'static-manifest.json'), 'utf8')) as Record<string, Record<string, string>>;
  const files = await loadStaticSite(join(config.DIST_DIR, 'client'), manifest);
  return { files, render: entry.handler, notFoundPage: files.get('/404.html') };
}

/** The store the configuration asks for: PostgreSQL when DATABASE_URL is set, else the embedded one. */
async function openStore(config: Config, logger: Logger, metrics?: Metrics): Promise<{ store: Store; rateLimitBackend?: RateLimiterAbstract; writable?: ReadinessCheck; ceiling?: ReadinessCheck }> {
  if (config.DATABASE_URL) {
    const store = await openPostgresStore(config.DATABASE_URL);
    // Write limits hold across every process that shares the database.
    const rateLimitBackend = new RateLimiterPostgres({ storeClient: store.pool, storeType: 'pool', tableName: 'rate_limits', tableCreated: true, points: config.WRITE_RATE_LIMIT || 1, duration: 60 });
    return { store, rateLimitBackend, writable: databaseAnswers((sql) => store.pool.query(sql)) };
  }
  if (config.DATA_DIR === ':memory:') return { store: openMemoryStore() };
  const store = await openEmbeddedStore({ dir: config.DATA_DIR, logger, observer: metrics?.journal, maxBytes: config.EMBEDDED_MAX_BYTES });
  return { store, writable: folderWritable(config.DATA_DIR), ceiling: storeCeiling(store.capacity, NEAR_CEILING) };
}

/** Paths the probes and metrics answer, as metric operations. */
const OPS_PATHS = { '/livez': 'livez', '/readyz': 'readyz', '/metrics': 'metrics' };

/** Body rules by the operation's body limit: audio uploads and CDN log batches are larger than ordinary JSON writes. */
function bodyPolicies(config: Config): (path: string) => BodyPolicy {
  const byLimit: Record<ReturnType<typeof bodyLimitOf>, BodyPolicy> = {
    json: jsonBody(config.BODY_LIMIT_BYTES),
    upload: uploadBody(config.BODY_LIMIT_BYTES, config.INGRESS_UPLOAD_LIMIT_BYTES, INGRESS_MEDIA_TYPES, isUploadType),
    ingest: logBatchBody(config.INGEST_BATCH_BYTES),
  };
  return (path) => byLimit[bodyLimitOf(path)];
}

/** Builds the site with Astro when there is no build yet. */
export function ensureBuild(config: Config, logger: Logger): void {
  if (existsSync(join(config.DIST_DIR, 'server', 'entry.mjs'))) return;
  logger.info({ dist: config.DIST_DIR }, 'no build found: running astro build');
  const astro = join(process.cwd(), 'node_modules', '.bin', 'astro');
  const result = spawnSync(astro, ['build'], { stdio: 'inherit', env: process.env });
  if (result.status !== 0) throw new Error(`astro build failed with status ${result.status}`);
}

/** The composition root: wires configuration, static site, renderer and observers into one server. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const { logger, requestLog } = createLogging(config.LOG_LEVEL, options.logDestination);
  const { files, render, notFoundPage } = options.site ?? (await loadBuild(config, logger));

  const content = await loadContent(config.CONTENT_DIR);
  // Metrics cost a little per request, so they exist only where someone can read them.
  const metrics = config.METRICS_TOKEN || config.METRICS_PORT !== undefined ? createMetrics(operationNamer((p) => files.has(p), OPS_PATHS)) : undefined;
  const { store, rateLimitBackend, writable, ceiling } = options.store ? { store: options.store } : await openStore(config, logger, metrics);
  const telemetry = await createTelemetry({
    ...telemetryRulesOf(content),
    resolver: systemResolver(),
    fetchDirectory: httpDirectoryFetcher(),
    store: store.telemetry,
    logger,
    flushMs: config.TELEMETRY_FLUSH_MS,
  });
  const omip = createOmip({ store, constitution: content.constitution, signer: await openLogSigner(config.DATA_DIR === ':memory:' ? null : config.DATA_DIR, config.LOG_SIGNING_KEY_FILE) });
  logger.info({ store: config.DATABASE_URL ? 'postgresql' : config.DATA_DIR === ':memory:' ? 'memory' : 'embedded' }, 'store ready');
  const links = { site: config.SITE_URL, canon: config.CANON_URL };
  // One budget per client, shared by the routes (which take a write) and the gateway (which refuses
  // an upload from a client with nothing left before reading its body).
  const writeBudget = rateLimitBackend ?? new RateLimiterMemory({ points: config.WRITE_RATE_LIMIT || 1, duration: 60 });
  const uploadLimiter = createWriteLimiter(config.WRITE_RATE_LIMIT, writeBudget);
  const app = createApp({ store, telemetry, omip, content, links, logger, writeRateLimit: config.WRITE_RATE_LIMIT, rateLimitBackend: writeBudget, ingestToken: config.INGEST_TOKEN });
  const views = createViews({ telemetry, content, links });

  metrics?.watch({ ledger: () => telemetry.snapshot(), verificationsInFlight: () => telemetry.verificationsInFlight(), dnsLookups: () => telemetry.dnsLookups().started });
  let closing = false;
  const readiness = createReadiness([
    condition('build', () => files.size > 0 || options.site !== undefined, 'no build loaded'),
    condition('accepting', () => !closing, 'shutting down'),
    ...(writable ? [writable] : []),
    ...(ceiling ? [ceiling] : []),
  ]);
  const ops = new Map<string, RouteHandler>([
    ['/livez', livez],
    ['/readyz', readyz(readiness)],
    ...(metrics && config.METRICS_TOKEN ? ([['/metrics', metricsRoute(metrics, config.METRICS_TOKEN)]] as const) : []),
  ]);
  // Probes and metrics are for the operator, not part of the agents' contract: beside the table.
  const route = (method: string, path: string): Lookup => {
    const probe = ops.get(path);
    return probe ? { handler: probe, params: {} } : app.lookup(method, path);
  };

  const observe = (r: ObservedRequest) => {
    // Path without query string, no address, no headers: nothing secret reaches the log.
    requestLog({ method: r.method, path: r.path, status: r.status, ms: Math.round(r.durationMs * 10) / 10 });
    telemetry.observe(r);
    metrics?.observe(r);
    options.observe?.(r);
  };

  const gateway = createGateway({
    files,
    notFoundPage,
    route,
    render,
    renderApi: options.site?.renderApi ?? false,
    locals: { views },
    bodyPolicy: bodyPolicies(config),
    uploads: {
      maxConcurrent: config.UPLOAD_CONCURRENCY,
      maxPerClient: config.UPLOAD_CONCURRENCY_PER_CLIENT,
      bytesPerSecond: config.UPLOAD_BYTES_PER_SECOND,
      idleMs: config.BODY_IDLE_TIMEOUT_MS,
      tmpDir: config.UPLOAD_TMP_DIR,
      admit: (client) => uploadLimiter.peek(client),
    },
    observe,
    logger,
  });

  const server = createServer({ keepAliveTimeout: 5000 }, (req, res) => void gateway(req, res));
  server.on('connect', refuseConnect);
  // Expect: 100-continue is answered by the gateway once the rules on the headers have passed.
  server.on('checkContinue', (req, res) => void gateway(req, res, true));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://127.0.0.1:${port}`;
  const metricsServer = metrics && config.METRICS_PORT !== undefined ? await startMetricsServer(config.METRICS_PORT, config.HOST, metricsRoute(metrics)) : undefined;
  logger.info({ url, dist: config.DIST_DIR, data: config.DATA_DIR, ...(metricsServer ? { metrics: metricsServer.url } : {}) }, 'listening');
  // Supervisors and tests wait for this line: do not leave it in the buffer.
  logger.flush();

  // What a killed process left in UPLOAD_TMP_DIR: now, then every ABANDONED_AFTER_MS.
  const sweep = () =>
    void sweepAbandonedUploads(config.UPLOAD_TMP_DIR).then(
      (removed) => removed && logger.info({ removed, folder: config.UPLOAD_TMP_DIR }, 'abandoned upload files removed'),
      (error: unknown) => logger.warn({ err: error }, 'upload sweep failed'),
    );
  sweep();
  const sweeper = setInterval(sweep, ABANDONED_AFTER_MS).unref();

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= new Promise<void>((resolve) => {
      closing = true;
      clearInterval(sweeper);
      metricsServer?.server.close();
      server.close(() => {
        void telemetry
          .close()
          .then(() => store.close())
          .finally(() => {
            logger.flush();
            resolve();
          });
      });
      server.closeIdleConnections();
    }));
  return { server, url, logger, close };
}
