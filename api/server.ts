import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from './config.ts';
import { INGRESS_MEDIA_TYPES, isUploadType } from './ingress/ingress.ts';
import { createGateway, refuseConnect, jsonBody, loadStaticSite, uploadBody, type BodyPolicy, type ObservedRequest, type RenderHandler } from './gateway/index.ts';
import { createLogging, type Logger, type LogSink } from './log.ts';
import { promises as dns } from 'node:dns';
import { createRoutes, createViews } from './app.ts';
import { createTelemetry } from './telemetry/telemetry.ts';
import { rangesOf } from './telemetry/verify.ts';
import { httpDirectoryFetcher } from './telemetry/web-bot-auth.ts';
import { createOmip } from './omip/service.ts';
import { createRouter } from './http/router.ts';
import { DYNAMIC_ROUTES, type DynamicRoute } from './openapi/registry.ts';
import { openLogSigner } from './omip/signer.ts';
import { loadContent } from './content/load.ts';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { createWriteLimiter } from './http/rate-limit.ts';
import { openEmbeddedStore, openMemoryStore, type Store } from './store/index.ts';
import { openPostgresStore } from './store/postgres/postgres-store.ts';
import { createClassifier } from './telemetry/classify.ts';

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
}

/** The store the configuration asks for: PostgreSQL when DATABASE_URL is set, else the embedded one. */
async function openStore(config: Config, logger: Logger): Promise<{ store: Store; rateLimitBackend?: RateLimiterAbstract }> {
  if (config.DATABASE_URL) {
    const store = await openPostgresStore(config.DATABASE_URL);
    // Write limits hold across every process that shares the database.
    const rateLimitBackend = new RateLimiterPostgres({ storeClient: store.pool, storeType: 'pool', tableName: 'rate_limits', tableCreated: true, points: config.WRITE_RATE_LIMIT || 1, duration: 60 });
    return { store, rateLimitBackend };
  }
  return { store: config.DATA_DIR === ':memory:' ? openMemoryStore() : await openEmbeddedStore({ dir: config.DATA_DIR, logger }) };
}

/** Body rules by path: audio uploads and CDN log batches are larger than ordinary JSON writes. */
function bodyPolicies(config: Config): (path: string) => BodyPolicy {
  const json = jsonBody(config.BODY_LIMIT_BYTES);
  const byPath: Record<string, BodyPolicy> = {
    '/api/ingress/audio': uploadBody(config.BODY_LIMIT_BYTES, config.INGRESS_UPLOAD_LIMIT_BYTES, INGRESS_MEDIA_TYPES, isUploadType),
    '/api/telemetry/ingest': jsonBody(4 * 1024 * 1024),
  };
  return (path) => byPath[path] ?? json;
}

/** The Allow header of each engine route's path, from the route table. */
function allowOf(): (path: string) => string | undefined {
  const allow = Object.fromEntries(DYNAMIC_ROUTES.filter((r) => r.route).map((r) => [r.route!, r.method === 'GET' ? 'GET, HEAD' : r.method])) as Record<NonNullable<DynamicRoute['route']>, string>;
  return createRouter(DYNAMIC_ROUTES, allow);
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
  ensureBuild(config, logger);

  const entry = (await import(pathToFileURL(join(config.DIST_DIR, 'server', 'entry.mjs')).href)) as { handler: RenderHandler };
  const manifest = JSON.parse(readFileSync(join(config.DIST_DIR, 'static-manifest.json'), 'utf8')) as Record<string, Record<string, string>>;
  const files = await loadStaticSite(join(config.DIST_DIR, 'client'), manifest);

  const content = await loadContent(config.CONTENT_DIR);
  const { store, rateLimitBackend } = await openStore(config, logger);
  const telemetry = await createTelemetry({
    classify: createClassifier(content.botFamilies.families),
    resolver: { reverse: (ip) => dns.reverse(ip), resolve: async (host) => (await dns.lookup(host, { all: true })).map((a) => a.address) },
    ranges: rangesOf(content.botIpRanges),
    families: content.botFamilies.families,
    fetchDirectory: httpDirectoryFetcher(),
    store: store.telemetry,
    baitPaths: content.crawlPolicy.disallow,
    logger,
  });
  const omip = createOmip({ store, constitution: content.constitution, signer: await openLogSigner(config.DATA_DIR === ':memory:' ? null : config.DATA_DIR, config.LOG_SIGNING_KEY_FILE) });
  logger.info({ store: config.DATABASE_URL ? 'postgresql' : config.DATA_DIR === ':memory:' ? 'memory' : 'embedded' }, 'store ready');
  const links = { site: config.SITE_URL, canon: config.CANON_URL };
  // One budget per client, shared by the routes (which take a write) and the gateway (which refuses
  // an upload from a client with nothing left before reading its body).
  const writeBudget = rateLimitBackend ?? new RateLimiterMemory({ points: config.WRITE_RATE_LIMIT || 1, duration: 60 });
  const uploadLimiter = createWriteLimiter(config.WRITE_RATE_LIMIT, writeBudget);
  const routes = createRoutes({ store, telemetry, omip, content, links, logger, writeRateLimit: config.WRITE_RATE_LIMIT, rateLimitBackend: writeBudget, ingestToken: config.INGEST_TOKEN });
  const views = createViews({ telemetry, content, links });

  const observe = (r: ObservedRequest) => {
    // Path without query string, no address, no headers: nothing secret reaches the log.
    requestLog({ method: r.method, path: r.path, status: r.status, ms: Math.round(r.durationMs * 10) / 10 });
    telemetry.observe(r);
    options.observe?.(r);
  };

  const gateway = createGateway({
    files,
    notFoundPage: files.get('/404.html'),
    route: createRouter(DYNAMIC_ROUTES, routes),
    allow: allowOf(),
    render: entry.handler,
    locals: { views },
    bodyPolicy: bodyPolicies(config),
    uploads: {
      maxConcurrent: config.UPLOAD_CONCURRENCY,
      maxPerClient: config.UPLOAD_CONCURRENCY_PER_CLIENT,
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
  logger.info({ url, dist: config.DIST_DIR, data: config.DATA_DIR }, 'listening');
  // Supervisors and tests wait for this line: do not leave it in the buffer.
  logger.flush();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
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
