import { DOCUMENTS } from './documents/catalog.ts';
import { usageRulesOf } from './telemetry/robots/preferences.ts';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from './config.ts';
import { firstLine, listenRefusal, StartupError } from './startup-error.ts';
export { StartupError };
import { INGRESS_MEDIA_TYPES, isUploadType } from './operations/ingress-upload.ts';
import {
  ABANDONED_AFTER_MS,
  checkUploadFolder,
  createGateway,
  refuseConnect,
  sweepAbandonedUploads,
  jsonBody,
  loadStaticSite,
  PRECOMPRESSED_DIR,
  staticManifestOf,
  uploadBody,
  writeProblem,
  type BodyPolicy,
  type ObservedRequest,
  type RenderHandler,
  type StaticFile,
} from './gateway/index.ts';
import { createLogging, requestContext, requestIdOf, type Logger, type LogSink, type RequestContext } from './log.ts';
import type { GuardedPool } from './store/postgres/pool.ts';
import { requestSpan, startTracing, stopTracing, traceStore } from './tracing.ts';
import { PATH } from './operations/paths.ts';
import { PROBE_PATHS } from './telemetry/operator-traffic.ts';
import { createEngine } from './engine.ts';
import type { BodyLimit } from './operations/operation.ts';
import type { Store } from './store/index.ts';
import { logBatchBody } from './operations/log-ingest.ts';
import { answerClientError } from './gateway/client-error.ts';
import {
  condition,
  createMetrics,
  createReadiness,
  livez,
  metricsRoute,
  operationNamer,
  readyz,
  startMetricsServer,
} from './operator/index.ts';
import type { RouteHandler } from './http/route.ts';
import { createClientResolver } from './http/client.ts';
import { sendRequestId } from './http/request-id.ts';
import { limitConnections } from './gateway/connections.ts';
import { LINGER_MS } from './gateway/lingering.ts';
import { closeStalledConnections } from './gateway/stalled-connections.ts';
import { createSharedAnswers } from './gateway/shared-answers.ts';
import { lockFolder, LockHeld, waitForLock, type HostLock } from './operator/host-lock.ts';
import { securityHeaders } from './http/security-headers.ts';
import { PROBLEM_TYPE, HttpProblem } from './http/problem.ts';
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
  await ensureBuild(config, logger);
  const dist = config.DIST_DIR;
  const entry = (await fromBuild(
    dist,
    'server/entry.mjs',
    () => import(pathToFileURL(join(dist, 'server', 'entry.mjs')).href),
  )) as { handler: RenderHandler };
  const manifest = await fromBuild(dist, 'static-manifest.json', () =>
    staticManifestOf(JSON.parse(readFileSync(join(dist, 'static-manifest.json'), 'utf8'))),
  );
  // Documents built under another SITE_URL are served with this one's links.
  const files = await fromBuild(dist, 'client/', () =>
    loadStaticSite(join(dist, 'client'), manifest, config.SITE_URL, join(dist, PRECOMPRESSED_DIR)),
  );
  return { files, render: entry.handler, notFoundPage: files.get('/404.html') };
}

/**
 * One part of the build read: a part missing, unreadable, cut short or not parsing (a build copied
 * in part, or away from node_modules/) is the operator's to rebuild, said in one line naming it.
 */
async function fromBuild<T>(dist: string, part: string, read: () => T | Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const broken =
      error instanceof SyntaxError ||
      ['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES', 'ERR_MODULE_NOT_FOUND'].includes(String(code));
    if (!broken) throw error;
    throw new StartupError(
      `DIST_DIR ${dist} holds no whole build: ${part}: ${firstLine(error)}. Run npm run build there, or set DIST_DIR to a whole build`,
    );
  }
}

/** The embedded store's folder belongs to one process: taken before the store opens. */
async function lockDataDir(config: Config, url: string): Promise<HostLock | undefined> {
  if (config.DATABASE_URL || config.DATA_DIR === ':memory:') return undefined;
  mkdirSync(config.DATA_DIR, { recursive: true, mode: 0o700 });
  try {
    return await lockFolder(config.DATA_DIR, 'data', `serving ${url}`);
  } catch (error) {
    if (!(error instanceof LockHeld)) throw error;
    throw new StartupError(
      `DATA_DIR ${error.message}. The embedded store belongs to one process: stop that one, or give this one its own DATA_DIR (or share a DATABASE_URL).`,
    );
  }
}

/** An upload folder that cannot hold a file would answer every upload 503: said at start instead. */
async function checkUploadTmpDir(config: Config): Promise<void> {
  await checkUploadFolder(config.UPLOAD_TMP_DIR).catch((error: NodeJS.ErrnoException) => {
    throw new StartupError(
      `UPLOAD_TMP_DIR ${config.UPLOAD_TMP_DIR} cannot hold upload files (${error.code ?? error.message}): create it, writable by this user, or name another folder`,
    );
  });
}

/** Binds the port first, so a busy port is said before anything else is opened. */
async function listenOn(server: Server, config: Config): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: NodeJS.ErrnoException) => {
    throw listenRefusal(error, 'PORT', config.PORT, config.HOST) ?? error;
  });
}

/**
 * How long an idle kept-alive connection stays open. A proxy must give up its idle upstream
 * connections first (deploy/nginx.conf: keepalive_timeout 20s, under this and under
 * SEND_TIMEOUT_MS, which also ends an idle connection): otherwise it sends a request on a
 * connection the process is closing, and a POST it may not retry is answered 502.
 */
export const KEEP_ALIVE_MS = 65_000;

/**
 * How long a stopping process waits for the requests in flight. A body trickling in a byte a second
 * is never stalled, so without a bound one client holds a stop open until the supervisor kills it
 * (systemd: TimeoutStopSec=45s), and the final saves never run. Past it, an unanswered request is
 * answered 503 SHUTTING_DOWN and every connection left is closed, well inside the supervisor's
 * time: the final saves run and the process exits 0.
 */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * After those 503s, how long their clients get to read them before the connections are destroyed:
 * as long as any refusal's lingering close reads on, so a client still sending gets its answer, not a reset.
 */
const SHUTDOWN_CUT_MS = LINGER_MS;

/**
 * A request still unanswered at the end of the grace period: 503, and its connection closed; a body
 * still arriving is read on and dropped until then (a lingering close), so the kernel does not reset
 * the connection over unread bytes and the client reads its answer. `client`: the request's client key.
 */
function cutShort(res: ServerResponse, client: string): void {
  if (res.headersSent) return;
  const req = res.req;
  const path = (req.url ?? '/').split('?')[0];
  const problem = new HttpProblem(
    'SHUTTING_DOWN',
    `The process is stopping and this request was still unanswered after ${SHUTDOWN_GRACE_MS / 1000} s. Retry with the same Idempotency-Key: a write whose body had arrived whole may have been saved.`,
  );
  writeProblem(req, res, client, problem, path ?? '/', { Connection: 'close' });
}

/** Until the store is open: /livez says the process lives, everything else 503 STARTING. */
function whileStarting(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/livez')
    return void res
      .writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', ...securityHeaders('text/plain') })
      .end('starting\n');
  const problem = new HttpProblem('STARTING', 'The service is starting: its store is not open yet. Retry in a second.');
  const body = JSON.stringify(problem.body(path));
  res.writeHead(problem.status, {
    'Content-Type': PROBLEM_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    ...securityHeaders(PROBLEM_TYPE),
    ...problem.headers,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  req.resume();
}

/** Live documents concurrent readers are sent from one Buffer made at most once a second. */
const SHARED_PATHS = new Set([PATH.botWallPage, PATH.getBotWall, PATH.getBotTraffic]);

/** Body rules by the operation's body limit: audio uploads and CDN log batches are larger than ordinary JSON writes. */
function bodyPolicies(config: Config): (limit: BodyLimit | undefined) => BodyPolicy {
  const byLimit: Record<BodyLimit, BodyPolicy> = {
    json: jsonBody(config.BODY_LIMIT_BYTES),
    upload: uploadBody(config.BODY_LIMIT_BYTES, config.INGRESS_UPLOAD_LIMIT_BYTES, INGRESS_MEDIA_TYPES, isUploadType),
    ingest: logBatchBody(config.INGEST_BATCH_BYTES),
  };
  return (limit) => byLimit[limit ?? 'json'];
}

const hasBuild = (dist: string) => existsSync(join(dist, 'server', 'entry.mjs'));

/**
 * Builds the site with Astro when there is no build yet. Processes started together take turns
 * (one builds, the others wait and find its build), and the build is made in a folder of its own
 * and renamed into place whole, so no process ever loads a half-written build.
 */
export async function ensureBuild(config: Config, logger: Logger): Promise<void> {
  if (hasBuild(config.DIST_DIR)) return;
  const parent = dirname(config.DIST_DIR);
  mkdirSync(parent, { recursive: true });
  const lock = await waitForLock(parent, 'build', `building ${config.DIST_DIR}`);
  try {
    if (hasBuild(config.DIST_DIR)) return;
    const building = `${config.DIST_DIR}.building-${process.pid}`;
    logger.info(
      { dist: config.DIST_DIR },
      'no build found: running astro build (run `npm run build` as a deploy step to start faster)',
    );
    // Astro runs on this process's Node (the pinned one), whatever `node` is first on PATH.
    const astro = join(process.cwd(), 'node_modules', 'astro', 'bin', 'astro.mjs');
    const result = spawnSync(process.execPath, [astro, 'build'], {
      stdio: 'inherit',
      env: { ...process.env, DIST_DIR: building },
    });
    if (result.status !== 0) throw new StartupError(`astro build failed with status ${result.status}`);
    rmSync(config.DIST_DIR, { recursive: true, force: true });
    renameSync(building, config.DIST_DIR);
  } finally {
    await lock.release();
  }
}

/** The HTTP server around the engine (api/engine.ts): static site, renderer, locks, signals, observers. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const { logger, requestLog, end: endLog } = createLogging(config.LOG_LEVEL, options.logDestination);
  // Loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  if (await startTracing())
    logger.info(
      { endpoint: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT },
      'tracing: spans are sent over OTLP/HTTP',
    );
  let handle: (req: IncomingMessage, res: ServerResponse, continueFirst?: boolean) => void = whileStarting;
  // Each request runs with its id (X-Request-Id, sent or made) in its log lines and its answer.
  const finishing = new WeakMap<object, RequestContext>();
  // The answers not yet closed: a stop past its grace period ends them.
  const inFlight = new Set<ServerResponse>();
  const tracked = (req: IncomingMessage, res: ServerResponse, continueFirst?: boolean) => {
    const context: RequestContext = { id: requestIdOf(req.headers['x-request-id']) };
    sendRequestId(res, context.id);
    inFlight.add(res);
    // Registered before the gateway's own 'close' listener, which reports the request: it finds the context here.
    res.on('close', () => (finishing.set(req.socket, context), inFlight.delete(res)));
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0]!;
    requestSpan(
      `HTTP ${method}`,
      { 'http.request.method': method, 'url.path': path.slice(0, 500), 'http.request.id': context.id },
      (span) => {
        span && res.on('close', () => (span.setAttribute('http.response.status_code', res.statusCode), span.end()));
        requestContext.run(context, () => handle(req, res, continueFirst));
      },
    );
  };
  const server = createServer({ keepAliveTimeout: KEEP_ALIVE_MS }, (req, res) => tracked(req, res));
  // A connection that neither sends nor takes a byte for this long (a stalled reader) is closed.
  const stalled = closeStalledConnections(server, config.SEND_TIMEOUT_MS);
  const clientOf = createClientResolver(config.TRUST_PROXY, config.PROXY_HEADER);
  const connections = limitConnections(server, config.MAX_CONNECTIONS_PER_CLIENT, clientOf.trusts);
  server.on('connect', refuseConnect);
  // A request node cannot read is refused after the answers pipelined before it, not instead of them.
  server.on('clientError', answerClientError);
  // Expect: 100-continue is answered by the gateway once the rules on the headers have passed.
  server.on('checkContinue', (req, res) => tracked(req, res, true));
  await listenOn(server, config);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://127.0.0.1:${port}`;
  let dataLock: HostLock | undefined;
  try {
    await checkUploadTmpDir(config);
    dataLock = options.store ? undefined : await lockDataDir(config, url);
    return await serve();
  } catch (error) {
    await dataLock?.release();
    stalled.stop();
    await new Promise((resolve) => server.close(resolve));
    throw error;
  }

  async function serve(): Promise<RunningServer> {
    const { files, render, notFoundPage } = options.site ?? (await loadBuild(config, logger));

    // Metrics cost a little per request, so they exist only where someone can read them.
    const metrics =
      config.METRICS_TOKEN || config.METRICS_PORT !== undefined
        ? createMetrics(operationNamer((p) => files.has(p), PROBE_PATHS))
        : undefined;
    const engine = await createEngine(config, {
      logger,
      metrics,
      store: options.store,
      robotsTxt: files.get('/robots.txt')?.body.toString('utf8'),
    });
    const { app, telemetry } = engine;
    const pool = (engine.store as { pool?: GuardedPool }).pool;
    // The PostgreSQL store's calls are all asynchronous: each becomes a span under its request's.
    if (pool) traceStore(engine.store);

    metrics?.watch({
      ledger: () => telemetry.snapshot(),
      verificationsInFlight: () => telemetry.verificationsInFlight(),
      dns: () => telemetry.dnsStats(),
      webBotAuth: () => telemetry.webBotAuth(),
      ...(pool ? { database: () => ({ up: pool.up(), ...pool.stats() }) } : {}),
    });
    let closing = false;
    const readiness = createReadiness([
      condition('build', () => files.size > 0 || options.site !== undefined, 'no build loaded'),
      condition('accepting', () => !closing, 'shutting down'),
      ...engine.readiness,
    ]);
    const ops = new Map<string, RouteHandler>([
      ['/livez', livez],
      ['/readyz', readyz(readiness)],
      ...(metrics && config.METRICS_TOKEN
        ? ([['/metrics', metricsRoute(metrics, config.METRICS_TOKEN)]] as const)
        : []),
    ]);
    // Probes and metrics are for the operator, not part of the agents' contract: beside the table.
    const route = (method: string, path: string): Lookup => {
      const probe = ops.get(path);
      return probe ? { handler: probe, params: {} } : app.lookup(method, path);
    };

    const observe = (r: ObservedRequest) => {
      // The line takes method, path without query string, status, duration and time: no address, no
      // headers, nothing secret reaches the log. The report itself, not a copy of those five fields.
      const context = r.connection ? finishing.get(r.connection) : undefined;
      requestLog(r, context?.id);
      telemetry.observe(r);
      metrics?.observe(r, context?.problem);
      options.observe?.(r);
    };

    const gateway = createGateway({
      clientOf,
      connections,
      shared: { paths: SHARED_PATHS, answers: createSharedAnswers() },
      files,
      documents: { catalog: DOCUMENTS, usage: usageRulesOf(engine.content.crawlPolicy) },
      notFoundPage,
      route,
      render,
      renderApi: options.site?.renderApi ?? false,
      // On-demand pages link to the address this server was configured with, not one read from the environment.
      locals: { views: app.views, links: { site: config.SITE_URL, canon: config.CANON_URL } },
      bodyPolicy: bodyPolicies(config),
      uploads: {
        maxConcurrent: config.UPLOAD_CONCURRENCY,
        maxPerClient: config.UPLOAD_CONCURRENCY_PER_CLIENT,
        bytesPerSecond: config.UPLOAD_BYTES_PER_SECOND,
        idleMs: config.BODY_IDLE_TIMEOUT_MS,
        tmpDir: config.UPLOAD_TMP_DIR,
        admit: (client) => engine.limiter.peek(client),
      },
      observe,
      logger,
    });

    handle = gateway;
    const metricsServer =
      metrics && config.METRICS_PORT !== undefined
        ? await startMetricsServer(config.METRICS_PORT, config.HOST, metricsRoute(metrics)).catch(
            async (error: unknown) => {
              // The engine is open by now (its store, its threads): closed before the refusal.
              await engine.close();
              throw error;
            },
          )
        : undefined;
    logger.info(
      {
        url,
        dist: config.DIST_DIR,
        ...(config.DATABASE_URL ? { store: 'postgresql' } : { data: config.DATA_DIR }),
        ...(metricsServer ? { metrics: metricsServer.url } : {}),
      },
      'listening',
    );
    // Supervisors and tests wait for this line: do not leave it in the buffer.
    logger.flush();

    // What a killed process left in UPLOAD_TMP_DIR: now, then every ABANDONED_AFTER_MS.
    const sweep = () =>
      void sweepAbandonedUploads(config.UPLOAD_TMP_DIR).then(
        (removed) =>
          removed && logger.info({ removed, folder: config.UPLOAD_TMP_DIR }, 'abandoned upload files removed'),
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
        // Past the grace period: 503 to whatever is unanswered, then every connection left is destroyed.
        const grace = setTimeout(() => {
          logger.warn({ requests: inFlight.size, graceMs: SHUTDOWN_GRACE_MS }, 'shutdown grace over: ending requests');
          for (const res of inFlight) cutShort(res, clientOf.ofRequest(res.req.socket, res.req.headers).key);
          setTimeout(() => server.closeAllConnections(), SHUTDOWN_CUT_MS).unref();
        }, SHUTDOWN_GRACE_MS).unref();
        server.close(() => {
          clearTimeout(grace);
          stalled.stop();
          void engine
            .close()
            .then(() => dataLock?.release())
            .then(() => stopTracing())
            .finally(() => {
              endLog();
              resolve();
            });
        });
        server.closeIdleConnections();
      }));
    return { server, url, logger, close };
  }
}
