import { rm } from 'node:fs/promises';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { HttpProblem, PROBLEM_TYPE, problemOf } from '../http/problem.ts';
import { header, headerText, type RouteAnswer, type RouteRequest } from '../http/route.ts';
import type { Lookup } from '../operations/dispatch.ts';
import type { BodyLimit } from '../operations/operation.ts';
import { securityHeaderList, securityHeaders, withCharset } from '../http/security-headers.ts';
import { createBandwidth } from './bandwidth.ts';
import {
  bodyNotTaken,
  checkBody,
  ClientClosed,
  declaresBody,
  readBody,
  streamBody,
  type BodyPolicy,
  type UploadedBody,
} from './body.ts';
import { chooseEncoding } from '../http/encoding.ts';
import { noneMatch, normalisePath, type StaticFile } from './static-site.ts';
import { formatOf, prepareDocuments } from './documents.ts';
import { prefersMarkdown } from './negotiate.ts';
import type { CatalogEntry } from '../documents/catalog.ts';
import type { UsageRule } from '../telemetry/robots/preferences.ts';
import { requestTarget } from './request-target.ts';
import { storageFault, uploadFile } from './upload-files.ts';
import { closing, LINGER_MS, whenLingerSlot } from './lingering.ts';
import type { Client, ClientResolver } from '../http/client.ts';
import { createUploadSlots, type UploadLimits } from './uploads.ts';
import type { SharedAnswer, SharedAnswers } from './shared-answers.ts';
import { referralOf, type ObservedRequest } from '../telemetry/observed.ts';
import { wallTime } from './wall-time.ts';

export type { ObservedRequest };

/** nginx's "client closed request": the client left before its answer was sent. */
export const CLIENT_CLOSED = 499;

/** Astro's node handler (`@astrojs/node` middleware mode). */
export type RenderHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (err?: unknown) => void,
  locals?: object,
) => Promise<void>;

export interface GatewayOptions {
  /** Prebuilt files by URL path. */
  files: Map<string, StaticFile>;
  /** The documents of the service (Link headers, Markdown twins) and the operator's AI usage preferences (Content-Usage). */
  documents?: { catalog: CatalogEntry[]; usage: readonly UsageRule[] };
  /** The HTML page for a 404 outside /api/. */
  notFoundPage?: StaticFile | undefined;
  /** The client of a request (TRUST_PROXY): every per-client limit, verification and the wall count it. */
  clientOf: ClientResolver;
  /** Connections per client (MAX_CONNECTIONS_PER_CLIENT): a request on one past the cap is answered 429 and closed. */
  connections?: { perClient: number; isOver(socket: Socket): boolean };
  /** Live documents sent to concurrent readers from one Buffer made at most once a second (api/gateway/shared-answers.ts). */
  shared?: { paths: ReadonlySet<string>; answers: SharedAnswers };
  /** The engine route of a method and path (api/operations), answered here without Astro: the handler and params, or the refusal (405 with Allow) to send before any body is read. */
  route: (method: string, path: string) => Lookup;
  /** Astro, for the pages it renders on demand. */
  render: RenderHandler;
  /** Hands /api/ paths that are no engine route to the renderer too (dev: Astro renders the documents the build prebuilds). */
  renderApi?: boolean;
  /** Handed to every on-demand page as Astro.locals. */
  locals: object;
  /** The body rules of an operation's body limit (its declaration's `bodyLimit`; JSON where none is found). */
  bodyPolicy: (limit: BodyLimit | undefined) => BodyPolicy;
  /** Bounds on uploads (bodies a policy streams to disk); also the idle time of every body. */
  uploads: UploadLimits;
  /** Called exactly once per request, when its answer is finished or the client went away. */
  observe: (request: ObservedRequest) => void;
  logger: Logger;
}

/** RFC 9110's methods and PATCH: a path answers 405 for those it does not take; any other method is 501. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const STATIC_ALLOW = 'GET, HEAD, OPTIONS';
function sendProblem(
  req: IncomingMessage,
  res: ServerResponse,
  client: string,
  problem: HttpProblem,
  instance: string,
): void {
  if (res.headersSent) return void res.destroy();
  if (res.destroyed) return;
  whenLingerSlot(req, client, () => {
    // It may have waited: the client may have left, or (never yet) another answer gone first.
    if (res.destroyed || res.headersSent) return;
    writeProblem(req, res, client, problem, instance);
  });
}

/**
 * Writes a problem answer now, with a lingering close when the request body is left unread (so the
 * client reads the answer, not a reset). `headers`: more of them (`Connection: close`). `client`:
 * the request's client key.
 */
export function writeProblem(
  req: IncomingMessage,
  res: ServerResponse,
  client: string,
  problem: HttpProblem,
  instance: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify(problem.body(instance));
  res.writeHead(
    problem.status,
    closing(req, client, {
      'Content-Type': PROBLEM_TYPE,
      'Content-Length': String(Buffer.byteLength(body)),
      ...securityHeaders(PROBLEM_TYPE),
      ...problem.headers,
      ...headers,
    }),
  );
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** A route's answer as it goes on the wire: final headers, and the body as one Buffer. */
function wireAnswer(answer: RouteAnswer): SharedAnswer {
  const body =
    typeof answer.body === 'string'
      ? Buffer.from(answer.body)
      : Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength);
  const type = answer.headers['Content-Type'] ?? answer.headers['content-type'];
  const typed: Record<string, string> = type === undefined ? {} : { 'Content-Type': withCharset(type) };
  const { 'content-type': _lower, ...rest } = answer.headers;
  return {
    status: answer.status,
    headers: { ...securityHeaders(type), ...rest, ...typed, 'Content-Length': String(body.byteLength) },
    body,
  };
}

function sendAnswer(req: IncomingMessage, res: ServerResponse, client: string, answer: SharedAnswer): void {
  whenLingerSlot(req, client, () => {
    if (res.destroyed || res.headersSent) return;
    res.writeHead(answer.status, closing(req, client, answer.headers));
    res.end(req.method === 'HEAD' ? undefined : answer.body);
  });
}

/** Keeps what Astro writes for a page (status 200, GET) as a shared answer once it is finished. */
function recordPage(req: IncomingMessage, res: ServerResponse, keep: (answer: SharedAnswer) => void): void {
  if (req.method !== 'GET') return;
  const chunks: Buffer[] = [];
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  const take = (chunk: unknown, encoding: unknown) => {
    if (typeof chunk === 'string')
      chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
  };
  res.write = ((chunk: unknown, ...rest: unknown[]) => (
    take(chunk, rest[0]),
    write(chunk, ...rest)
  )) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => (
    typeof chunk !== 'function' && take(chunk, rest[0]),
    end(chunk, ...rest)
  )) as typeof res.end;
  res.once('finish', () => {
    if (res.statusCode !== 200) return;
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(res.getHeaders()))
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
    keep({ status: 200, headers: { ...headers, 'content-length': String(body.byteLength) }, body });
  });
}

function sendStatic(req: IncomingMessage, res: ServerResponse, file: StaticFile, status = 200): void {
  // The representation this request gets decides which ETag its If-None-Match is compared with:
  // a 304 only for the coding it would be sent (each coding has its own strong ETag).
  const encoding = chooseEncoding(req.headers['accept-encoding']);
  const coding = encoding && file[encoding] ? encoding : 'identity';
  if (status === 200 && noneMatch(req.headers['if-none-match'], file.etags[coding]!)) {
    res.writeHead(304, file.headers.notModified[coding]!);
    return void res.end();
  }
  res.writeHead(status, file.headers[coding]!);
  res.end(req.method === 'HEAD' ? undefined : coding === 'identity' ? file.body : file[coding]);
}

function sendOptions(res: ServerResponse, allow: string): void {
  res.writeHead(204, { Allow: allow, ...securityHeaders(undefined) }).end();
}

/**
 * Astro writes its pages with one writeHead(status, headers): the security headers that fit the
 * page's Content-Type (and a charset on text types) are added there.
 */
function secureRender(res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    // A flat list is one of this gateway's own prebuilt answers (the 404 page): it has them already.
    if (rest.some(Array.isArray)) return writeHead.call(this, status, ...(rest as []));
    const headers = rest.find((r): r is OutgoingHttpHeaders => typeof r === 'object' && r !== null);
    const names = new Map(Object.keys(headers ?? {}).map((k) => [k.toLowerCase(), k]));
    const key = names.get('content-type');
    const declared = headers && key ? headers[key] : this.getHeader('content-type');
    const type = typeof declared === 'string' ? withCharset(declared) : undefined;
    if (headers && key && type) headers[key] = type;
    else if (type) this.setHeader('Content-Type', type);
    const list = securityHeaderList(type);
    for (let i = 0; i < list.length; i += 2) {
      const name = list[i]!;
      if (!names.has(name.toLowerCase()) && !this.hasHeader(name)) this.setHeader(name, list[i + 1]!);
    }
    return writeHead.call(this, status, ...(rest as []));
  } as typeof res.writeHead;
}

const NO_BODY = new Uint8Array();

/**
 * CONNECT never reaches the request handler (node hands it to the server's 'connect' event and,
 * with no listener, leaves the socket open): this answers it 405 and closes the connection.
 */
export function refuseConnect(_req: IncomingMessage, socket: Socket): void {
  // No instance: CONNECT's target is an authority, another server's (never echoed).
  const body = JSON.stringify(
    new HttpProblem('METHOD_NOT_ALLOWED', 'This server is no proxy: CONNECT is not taken.').body(),
  );
  const headers = {
    'Content-Type': PROBLEM_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    Allow: 'GET, HEAD, OPTIONS, POST',
    ...securityHeaders(PROBLEM_TYPE),
    Connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.on('error', () => socket.destroy());
  socket.end(`HTTP/1.1 405 Method Not Allowed\r\n${head}\r\n${body}`);
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/**
 * The one HTTP edge: serves prebuilt files from memory, enforces body and upload rules, calls the
 * engine's routes, hands the on-demand pages to Astro, answers 404s, and reports each request once
 * when it is finished (499 when its client left first).
 */
export function createGateway(options: GatewayOptions) {
  const { render, locals, logger, uploads, shared } = options;
  // Every document's Link, Content-Usage and Vary made once here; pages with a Markdown twin negotiate.
  const { files, markdown, headersOf } = prepareDocuments(
    options.files,
    options.documents?.catalog ?? [],
    options.documents?.usage ?? [],
  );
  const slots = createUploadSlots(uploads);
  const bandwidth = createBandwidth(uploads.bytesPerSecond);

  /**
   * `continueFirst`: the request came through the server's 'checkContinue' event (`Expect:
   * 100-continue`), so the client waits for "100 Continue" before it sends its body; it is sent only
   * once every rule on the headers has passed, and a refused client never sends the body at all.
   */
  return function gateway(req: IncomingMessage, res: ServerResponse, continueFirst = false): void {
    const started = performance.now();
    const method = req.method ?? 'GET';
    // Everything below (and Astro) reads the origin-form; a foreign authority is refused in the try below, never echoed.
    const target = requestTarget(req.url ?? '/', req.headers.host);
    const url = (req.url = target.originForm);
    const query = url.indexOf('?');
    const rawPath = query === -1 ? url : url.slice(0, query);
    // The client (behind a trusted proxy, the one it forwarded); the socket is gone by the time a closed request is reported.
    const socket = req.socket;
    const client = options.clientOf.ofRequest(socket, req.headers);
    const remoteAddress = client.address;
    let reported = false;
    // What was answered, for the ledger's formats: a prebuilt file, or what answerDynamic sets.
    let served: { format?: ObservedRequest['format']; tokens?: number; step?: ObservedRequest['step'] } | undefined;
    const report = () => {
      if (reported) return;
      reported = true;
      const finished = performance.now();
      try {
        const headers = req.headers;
        const signatureInput = header(req, 'signature-input');
        const signature = header(req, 'signature');
        const queryText = query === -1 ? undefined : url.slice(query);
        // Every field present (undefined when the request has none): one shape for every request.
        const observed: ObservedRequest = {
          method,
          path: rawPath,
          query: queryText,
          host: headers.host ?? '',
          userAgent: headerText(headers['user-agent']) ?? '',
          // 'close' without 'finish': the client left before the answer was sent.
          status: res.writableFinished ? res.statusCode : CLIENT_CLOSED,
          durationMs: finished - started,
          time: wallTime(finished),
          remoteAddress,
          connection: socket,
          referral:
            headers.referer === undefined && queryText === undefined
              ? undefined
              : referralOf(headers.referer, queryText ?? ''),
          format: res.statusCode < 400 ? served?.format : undefined,
          markdownTokens: served?.format === 'markdown' ? served.tokens : undefined,
          step: served?.step,
          signature:
            signatureInput === undefined || signature === undefined
              ? undefined
              : { signature, signatureInput, signatureAgent: header(req, 'signature-agent'), target: url },
        };
        options.observe(observed);
      } catch (error) {
        logger.error({ err: error }, 'request observer failed');
      }
    };
    // A response always emits 'close', once: after 'finish' when it was answered, alone when the
    // client left (`on`, not `once`: report has its own guard, and once's wrapper cost 40 ns a request).
    res.on('close', report);

    try {
      if (!target.ours)
        throw new HttpProblem(
          'BAD_PATH',
          'The request target names another server than the one its Host header names: this server is no proxy.',
        );
      if (!KNOWN_METHODS.has(method))
        throw new HttpProblem(
          'NOT_IMPLEMENTED',
          `${method} is not a method this server implements. Use GET, HEAD, OPTIONS or POST.`,
        );
      if (!BODY_METHODS.has(method) && declaresBody(req)) throw bodyNotTaken(method);
      const path = normalisePath(rawPath);
      if (path === null) throw new HttpProblem('BAD_PATH', 'The request path cannot be decoded or leaves the site.');

      if (options.connections?.isOver(req.socket)) {
        throw new HttpProblem(
          'TOO_MANY_CONNECTIONS',
          `This address has more than ${options.connections.perClient} connections open; at most that many at once. Close some, or reuse them (keep-alive).`,
          {
            headers: { Connection: 'close', 'Retry-After': '5' },
            extra: { limit: options.connections.perClient },
          },
        );
      }
      // A page's Markdown (prebuilt, also for a live page) when Accept prefers it: before the shared answers, which are HTML.
      const twin = method === 'GET' || method === 'HEAD' ? markdown.get(path) : undefined;
      if (twin !== undefined && prefersMarkdown(req.headers.accept)) return sendStatic(req, res, (served = twin));
      const sharedKey =
        (method === 'GET' || method === 'HEAD') && shared?.paths.has(path)
          ? `${url}\n${chooseEncoding(req.headers['accept-encoding']) ?? ''}`
          : null;
      if (sharedKey) shared!.answers.reading(req, res);
      const kept = sharedKey ? shared!.answers.get(sharedKey) : undefined;
      if (kept) {
        served = { format: formatOf(kept.headers['Content-Type'] ?? kept.headers['content-type']) };
        return sendAnswer(req, res, client.key, kept);
      }

      const file = files.get(path);
      if (file) {
        if (method === 'GET' || method === 'HEAD') return sendStatic(req, res, (served = file));
        if (method === 'OPTIONS') return sendOptions(res, STATIC_ALLOW);
        throw new HttpProblem('METHOD_NOT_ALLOWED', `${path} is a document: use GET.`, {
          headers: { Allow: STATIC_ALLOW },
        });
      }
      // Everything else may wait (a body, a route, Astro): a prebuilt read never enters an async function.
      answerDynamic(req, res, { method, path, url, client, sharedKey, continueFirst, served: (served = {}) }).catch(
        (error: unknown) => fail(req, res, client.key, rawPath, method, error),
      );
    } catch (error) {
      fail(req, res, client.key, rawPath, method, error);
    }
  };

  /** What the request's headers and path did not answer: engine routes, on-demand pages, 404s. */
  async function answerDynamic(
    req: IncomingMessage,
    res: ServerResponse,
    r: {
      method: string;
      path: string;
      url: string;
      client: Client;
      sharedKey: string | null;
      continueFirst: boolean;
      /** Set to the format answered and the funnel step a tool call took, for the ledger. */
      served: { format?: ObservedRequest['format']; step?: ObservedRequest['step'] };
    },
  ): Promise<void> {
    const { method, path, url, client, sharedKey, continueFirst } = r;
    const remoteAddress = client.address;
    const route = options.route(method, path);
    if (!route) {
      if (path.startsWith('/api/') && !options.renderApi) {
        // Body rules hold on every path: an oversized body is 413 even where nothing is served.
        if (BODY_METHODS.has(method)) {
          const rules = checkBody(req, options.bodyPolicy(undefined));
          if (continueFirst) res.writeContinue();
          await readBody(req, rules.limit, uploads.idleMs);
        }
        return notFound(req, res, client.key, path);
      }
      // Astro's pages are read-only; a WHATWG Request (which Astro makes) refuses TRACE and CONNECT.
      if (method === 'OPTIONS') return sendOptions(res, STATIC_ALLOW);
      if (method !== 'GET' && method !== 'HEAD')
        throw new HttpProblem('METHOD_NOT_ALLOWED', `${path} is a page: use GET.`, {
          headers: { Allow: STATIC_ALLOW },
        });
      secureRender(res);
      for (const [name, value] of Object.entries(headersOf(path))) res.setHeader(name, value);
      r.served.format = 'html';
      if (sharedKey) recordPage(req, res, (answer) => shared!.answers.set(sharedKey, answer));
      return await render(req, res, () => notFound(req, res, client.key, path), locals);
    }
    // A method the path does not take (TRACE and CONNECT too) is refused before any body is read.
    if ('refuse' in route) throw route.refuse;

    const request: { -readonly [K in keyof RouteRequest]: RouteRequest[K] } = {
      method,
      target: url,
      headers: req.headers,
      body: NO_BODY,
      client: remoteAddress,
      params: route.params,
    };
    if (BODY_METHODS.has(method)) {
      const rules = checkBody(req, options.bodyPolicy(route.operation?.bodyLimit));
      if (rules.upload)
        request.upload = await receiveUpload(req, res, rules.mediaType, rules.limit, remoteAddress, continueFirst);
      else {
        if (continueFirst) res.writeContinue();
        request.body = await readBody(req, rules.limit, uploads.idleMs);
      }
    }
    const routed = await route.handler(request);
    const answer = wireAnswer(routed);
    if ((method === 'GET' || method === 'HEAD') && answer.status === 200)
      Object.assign(answer.headers, headersOf(path));
    r.served.format = formatOf(answer.headers['Content-Type']);
    r.served.step = routed.step;
    if (sharedKey) shared!.answers.set(sharedKey, answer);
    return sendAnswer(req, res, client.key, answer);
  }

  /** A request that failed: its problem answered, or nothing when its client left first. */
  function fail(
    req: IncomingMessage,
    res: ServerResponse,
    client: string,
    rawPath: string,
    method: string,
    error: unknown,
  ): void {
    // Nobody is left to answer: the request is reported as 499 and is no error of the server's.
    if (error instanceof ClientClosed || (res.destroyed && !res.writableFinished))
      return void logger.debug({ path: rawPath, method }, 'client closed request');
    const problem = problemOf(error);
    if (problem) return sendProblem(req, res, client, problem, rawPath);
    logger.error({ err: error, path: rawPath, method }, 'unhandled error');
    sendProblem(
      req,
      res,
      client,
      new HttpProblem('INTERNAL', 'The server failed to answer. Nothing was changed.'),
      rawPath,
    );
  }

  /**
   * An upload, checked before a byte of it is read (the client's write limit, the upload slots),
   * then streamed to a temporary file removed when the answer is finished.
   */
  async function receiveUpload(
    req: IncomingMessage,
    res: ServerResponse,
    mediaType: string,
    limit: number,
    client: string,
    continueFirst: boolean,
  ): Promise<UploadedBody> {
    await uploads.admit(client);
    const release = slots.acquire(client);
    if (continueFirst) res.writeContinue();
    const file = uploadFile(uploads.tmpDir);
    const gone = new AbortController();
    res.once('close', () => {
      gone.abort(new ClientClosed());
      release();
      void rm(file, { force: true });
    });
    const size = await streamBody(req, file, limit, uploads.idleMs, bandwidth).catch((error: unknown) => {
      const code = storageFault(error);
      if (!code) throw error;
      // The folder's state (full, read-only, gone), not a bug: a line without a stack, and a 503 to retry.
      logger.warn({ code, folder: uploads.tmpDir }, 'upload refused: its temporary file cannot be written');
      throw new HttpProblem(
        'UPLOAD_STORAGE_UNAVAILABLE',
        'The server cannot store uploads at the moment; nothing was done. Retry after Retry-After.',
        { headers: { Connection: 'close' } },
      );
    });
    return { file, size, mediaType, contentType: req.headers['content-type'] ?? mediaType, signal: gone.signal };
  }

  function notFound(req: IncomingMessage, res: ServerResponse, client: string, path: string): void {
    if (path.startsWith('/api/') || !options.notFoundPage) {
      return sendProblem(
        req,
        res,
        client,
        new HttpProblem('NOT_FOUND', `Nothing is served at ${path}. See /llms.txt for every document.`),
        path,
      );
    }
    sendStatic(req, res, options.notFoundPage, 404);
  }
}
