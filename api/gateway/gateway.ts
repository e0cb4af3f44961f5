import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { HttpProblem, isHttpProblem, PROBLEM_TYPE } from '../http/problem.ts';
import { header, type RouteAnswer, type RouteHandler } from '../http/route.ts';
import { readBody, type BodyPolicy } from './body.ts';
import { chooseEncoding } from '../http/encoding.ts';
import { normalisePath, type StaticFile } from './static-site.ts';

/** One finished request, as telemetry and the request log see it. */
export interface ObservedRequest {
  method: string;
  path: string;
  host: string;
  userAgent: string;
  status: number;
  durationMs: number;
  /** The client address as the socket saw it; never stored or logged in clear. */
  remoteAddress: string;
  /** HTTP Message Signature headers (Web Bot Auth), only when the request carries them. */
  signature?: { signature: string; signatureInput: string; signatureAgent: string | undefined; target: string };
}

/** Astro's node handler (`@astrojs/node` middleware mode). */
export type RenderHandler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void, locals?: object) => Promise<void>;

export interface GatewayOptions {
  /** Prebuilt files by URL path. */
  files: Map<string, StaticFile>;
  /** The HTML page for a 404 outside /api/. */
  notFoundPage?: StaticFile | undefined;
  /** The engine route of a path (api/app.ts), answered here without Astro. */
  route: (path: string) => RouteHandler | undefined;
  /** Astro, for the pages it renders on demand. */
  render: RenderHandler;
  /** Hands /api/ paths that are no engine route to the renderer too (dev: Astro renders the documents the build prebuilds). */
  renderApi?: boolean;
  /** Handed to every on-demand page as Astro.locals. */
  locals: object;
  /** The body rules of a path, or null when the path takes no body. */
  bodyPolicy: (path: string) => BodyPolicy;
  /** Called exactly once per request, when its answer is finished or the client went away. */
  observe: (request: ObservedRequest) => void;
  logger: Logger;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const STATIC_ALLOW = 'GET, HEAD, OPTIONS';

function sendProblem(res: ServerResponse, problem: HttpProblem, instance: string, head = false): void {
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify(problem.body(instance));
  res.writeHead(problem.status, { 'Content-Type': PROBLEM_TYPE, 'Content-Length': Buffer.byteLength(body), ...problem.headers });
  res.end(head ? undefined : body);
}

function sendAnswer(res: ServerResponse, answer: RouteAnswer, head: boolean): void {
  const length = typeof answer.body === 'string' ? Buffer.byteLength(answer.body) : answer.body.byteLength;
  res.writeHead(answer.status, { ...answer.headers, 'Content-Length': length });
  res.end(head ? undefined : answer.body);
}

const NO_BODY = new Uint8Array();

function sendStatic(req: IncomingMessage, res: ServerResponse, file: StaticFile, status = 200): void {
  const match = req.headers['if-none-match'];
  if (status === 200 && match?.split(',').some((t) => t.trim().replace(/^W\//, '') === file.etag)) {
    res.writeHead(304, file.headers.notModified);
    return void res.end();
  }
  const encoding = chooseEncoding(req.headers['accept-encoding']);
  const coded = encoding && file[encoding] ? encoding : null;
  res.writeHead(status, coded ? file.headers[coded]! : file.headers.identity);
  res.end(req.method === 'HEAD' ? undefined : coded ? file[coded] : file.body);
}

/**
 * The one HTTP edge: serves prebuilt files from memory, enforces body rules, calls the engine's
 * routes, hands the on-demand pages to Astro, answers 404s, and reports each request once when it
 * is finished.
 */
export function createGateway(options: GatewayOptions) {
  const { files, render, locals, logger } = options;

  return async function gateway(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const rawPath = query === -1 ? url : url.slice(0, query);
    // The socket is gone by the time a closed request is reported.
    const remoteAddress = req.socket.remoteAddress ?? '';
    let reported = false;
    const report = () => {
      if (reported) return;
      reported = true;
      try {
        const observed: ObservedRequest = {
          method,
          path: rawPath,
          host: req.headers.host ?? '',
          userAgent: req.headers['user-agent'] ?? '',
          status: res.statusCode,
          durationMs: performance.now() - started,
          remoteAddress,
        };
        const signatureInput = header(req, 'signature-input');
        const signature = header(req, 'signature');
        if (signatureInput !== undefined && signature !== undefined) observed.signature = { signature, signatureInput, signatureAgent: header(req, 'signature-agent'), target: url };
        options.observe(observed);
      } catch (error) {
        logger.error({ err: error }, 'request observer failed');
      }
    };
    // A response always emits 'close': after 'finish' when it was answered, alone when the client left.
    res.once('close', report);

    try {
      const path = normalisePath(rawPath);
      if (path === null) throw new HttpProblem(400, 'BAD_PATH', 'The request path cannot be decoded or leaves the site.');

      const file = files.get(path);
      if (file) {
        if (method === 'GET' || method === 'HEAD') return sendStatic(req, res, file);
        if (method === 'OPTIONS') return void res.writeHead(204, { Allow: STATIC_ALLOW }).end();
        throw new HttpProblem(405, 'METHOD_NOT_ALLOWED', `${path} is a document: use GET.`, { headers: { Allow: STATIC_ALLOW } });
      }

      const body = BODY_METHODS.has(method) ? await readBody(req, options.bodyPolicy(path)) : NO_BODY;
      const route = options.route(path);
      if (route) {
        const answer = await route({ method, target: url, headers: req.headers, body, client: remoteAddress });
        return sendAnswer(res, answer, method === 'HEAD');
      }
      if (path.startsWith('/api/') && !options.renderApi) return notFound(req, res, path);
      (req as IncomingMessage & { body?: Uint8Array }).body = body;
      await render(req, res, () => notFound(req, res, path), locals);
    } catch (error) {
      if (isHttpProblem(error)) return sendProblem(res, error, rawPath, method === 'HEAD');
      logger.error({ err: error, path: rawPath, method }, 'unhandled error');
      sendProblem(res, new HttpProblem(500, 'INTERNAL', 'The server failed to answer. Nothing was changed.'), rawPath);
    }
  };

  function notFound(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (path.startsWith('/api/') || !options.notFoundPage) {
      return sendProblem(res, new HttpProblem(404, 'NOT_FOUND', `Nothing is served at ${path}. See /llms.txt for every document.`), path, req.method === 'HEAD');
    }
    sendStatic(req, res, options.notFoundPage, 404);
  }
}
