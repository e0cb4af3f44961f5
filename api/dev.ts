import { watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
// The one module of api/ that imports Astro: the editors' dev entry, never loaded by `npm start`.
import { dev } from 'astro';
import { loadConfig } from './config.ts';
import { ContentError, loadContent, parseDoctrine } from './content/load.ts';
import type { RenderHandler } from './gateway/gateway.ts';
import { HttpProblem } from './http/problem.ts';
import { startServer, type RunningServer, type Site } from './server.ts';
import { openMemoryStore } from './store/embedded/embedded-store.ts';

// `npm run dev`: the whole service (engine routes, live telemetry, /bot-wall) with Astro's dev server
// behind the gateway instead of the build, so an edit to content/ shows on the next reload. Memory
// store and loopback only unless DATA_DIR and HOST say otherwise.
const config = loadConfig({ DATA_DIR: ':memory:', HOST: '127.0.0.1', ...process.env });

/** Every content file as the build checks it: the data files and the doctrine notes' frontmatter. */
async function checkContent(dir: string): Promise<string> {
  const content = await loadContent(dir);
  const notes = (await readdir(join(dir, 'doctrine'))).filter((f) => f.endsWith('.md'));
  for (const note of notes) parseDoctrine(note.slice(0, -3), await readFile(join(dir, 'doctrine', note), 'utf8'));
  return JSON.stringify(content);
}

let contentError: string | null = null;
const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
function showContentError(res: ServerResponse, message: string): void {
  const body = `<!doctype html><meta charset="utf-8"><title>Content error</title><h1>Content error</h1><p>The content does not pass its schema; the build would stop here. Fix the file and reload.</p><pre>${escapeHtml(message)}</pre>\n`;
  res.writeHead(500, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).end(body);
}

/** The documents under /api/ that Astro renders (src/pages/api), as the build would prebuild them. */
async function astroApiPages(root: string): Promise<Set<string>> {
  const dir = join(root, 'src', 'pages', 'api');
  const files = await readdir(dir, { recursive: true });
  return new Set(
    files
      .filter((f) => /\.(ts|js|astro|md)$/.test(f))
      .map((f) => `/api/${f.replace(/\.(ts|js|astro|md)$/, '').replace(/\/index$/, '')}`),
  );
}
const apiPages = await astroApiPages(process.cwd());

// Broken content at start leaves nothing to serve: say which file and field, as the build would.
const startFailed = (error: unknown): never => {
  console.error(
    `content error: ${error instanceof Error ? error.message : String(error)}\nFix it and run npm run dev again.`,
  );
  process.exit(1);
};
let known = await checkContent(config.CONTENT_DIR).catch(startFailed);
const astro = await dev({ root: process.cwd(), logLevel: 'warn', server: { host: '127.0.0.1', port: 0 } }).catch(
  startFailed,
);
const LOCALS = Symbol.for('astro.locals');
/** Astro's dev server as the gateway's renderer: locals go on the request, where Astro dev reads them. */
const render: RenderHandler = async (req: IncomingMessage, res: ServerResponse, _next, locals) => {
  await settled();
  if (contentError) return showContentError(res, contentError);
  // The gateway has read the body already; only the engine's routes take one.
  if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { Allow: 'GET, HEAD' }).end();
  // Anything else under /api/ would be Vite serving our source files: not found, as in production.
  const path = (req.url ?? '/').split('?')[0]!.replace(/\/$/, '');
  if (path.startsWith('/api/') && !apiPages.has(path)) {
    const problem = new HttpProblem(
      'NOT_FOUND',
      `Nothing is served at ${path}. See /llms.txt for every document.`,
    ).toAnswer(path);
    return void res.writeHead(problem.status, problem.headers).end(problem.body);
  }
  // Vite takes an extensionless URL that names a source file (/api/omip/primitives -> api/omip/primitives.ts)
  // for a module request and would answer JavaScript; with a trailing slash it leaves it to Astro.
  if (path.startsWith('/api/')) req.url = `${path}/${(req.url ?? '').slice(path.length).replace(/^\//, '')}`;
  Reflect.set(req, LOCALS, locals);
  astro.handle(req, res);
};
const site: Site = { files: new Map(), render, renderApi: true };
// The memory store outlives the engine's restarts; an embedded store is closed and reopened.
const store = config.DATA_DIR === ':memory:' ? openMemoryStore() : undefined;

// The engine listens on a loopback port of its own; the editors' port belongs to this front server,
// which hands each request to the engine of the moment, so a restart never refuses a connection.
const engineConfig = { ...config, PORT: 0, HOST: '127.0.0.1', METRICS_PORT: undefined };
const startEngine = () => startServer(engineConfig, { site, ...(store ? { store } : {}) });
type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const handlerOf = (r: RunningServer) => r.server.listeners('request')[0] as Handler;

let running: RunningServer = await startEngine();
let engine: Promise<Handler> = Promise.resolve(handlerOf(running));

/** Restarts the engine on new content: requests that arrive meanwhile wait for the new one. */
let restarting: Promise<void> = Promise.resolve();
function restart(): void {
  restarting = restarting.then(async () => {
    let ready!: (h: Handler) => void;
    engine = new Promise((r) => (ready = r));
    // Closed first: it saves its telemetry ledger, which the next one loads from the same store.
    await running.close();
    running = await startEngine();
    ready(handlerOf(running));
    running.logger.info('engine restarted on the new content');
  });
}

/**
 * After an edit: a broken file is shown on every page (file and field) and the server keeps running;
 * a data change restarts the engine in process, so its routes read the new content. Page requests
 * wait for this check, never for the restart (the engine that serves them is the one restarting).
 */
let checking: Promise<void> = Promise.resolve();
let timer: NodeJS.Timeout | undefined;
async function recheck(): Promise<void> {
  let current: string;
  try {
    current = await checkContent(config.CONTENT_DIR);
  } catch (error) {
    contentError =
      error instanceof ContentError ? error.message : error instanceof Error ? error.message : String(error);
    running.logger.error({ content: contentError }, 'content error');
    return;
  }
  if (contentError) running.logger.info('content fixed');
  contentError = null;
  if (current === known) return;
  known = current;
  restart();
}
watch(config.CONTENT_DIR, { recursive: true }, () => {
  clearTimeout(timer);
  timer = setTimeout(() => (checking = checking.then(recheck)), 50);
});

/** The latest modification time among the content files. */
async function contentStamp(dir: string): Promise<number> {
  const names = await readdir(dir, { recursive: true });
  const times = await Promise.all(
    names.map((n) =>
      stat(join(dir, n)).then(
        (s) => s.mtimeMs,
        () => 0,
      ),
    ),
  );
  return Math.max(0, ...times);
}
const DATA_STORE = join(process.cwd(), '.astro', 'data-store.json');
let seenStamp = await contentStamp(config.CONTENT_DIR);

/**
 * Makes "the next reload" true: a page request after an edit waits until the edit is checked and
 * Astro's content layer has rewritten its data store (at most 15 s), instead of racing it.
 */
let settling: Promise<void> = Promise.resolve();
async function settled(): Promise<void> {
  const stamp = await contentStamp(config.CONTENT_DIR);
  if (stamp > seenStamp) {
    seenStamp = stamp;
    clearTimeout(timer);
    checking = checking.then(recheck);
    settling = (async () => {
      // Generous: on a busy machine Astro takes seconds to rewrite the store; an editor waits once.
      const deadline = Date.now() + 15_000;
      while (
        Date.now() < deadline &&
        (await stat(DATA_STORE).then(
          (s) => s.mtimeMs,
          () => 0,
        )) < stamp
      )
        await new Promise((r) => setTimeout(r, 20));
      // Astro invalidates its modules in the write's callback: let that run first.
      await new Promise((r) => setTimeout(r, 20));
    })();
  }
  await checking;
  // A broken file is shown at once: Astro will not rewrite its store for it.
  if (!contentError) await settling;
}

// Listening last: every request finds the checks above set up.
const front = createServer((req, res) => void engine.then((handle) => handle(req, res)));
await new Promise<void>((resolve) => front.listen(config.PORT, config.HOST, resolve));
running.logger.info(
  { url: `http://${config.HOST}:${config.PORT}`, content: config.CONTENT_DIR, data: config.DATA_DIR },
  'dev server ready',
);
running.logger.flush();

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  running.logger.info({ signal }, 'shutting down');
  await checking;
  await restarting;
  front.close();
  front.closeIdleConnections();
  await running.close();
  await astro.stop();
  running.logger.flush(() => process.exit(0));
};
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
