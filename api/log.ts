import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import { BUILD } from './build-info.ts';

export type { Logger };

// Lines are collected up to 8 KiB and written at least every 200 ms. A write(2) per request line
// cost about a tenth of static throughput, and pino's own buffered destination (sonic-boom) still
// cost 1.2-2 µs a line here against 0.06 µs for appending to a string.
const BUFFER_BYTES = 8 * 1024;
const FLUSH_MS = 200;

/** Where log lines go: a writable stream (stdout by default). */
export interface LogSink {
  write(chunk: string, callback?: () => void): unknown;
}

/**
 * Lines appended in memory and handed to the sink in chunks. On Linux, writes to stdout are
 * synchronous for files, terminals and pipes alike, so a flush at exit is complete.
 */
function lineBuffer(sink: LogSink) {
  let pending = '';
  const flush = (callback?: () => void) => {
    if (pending === '') return void (callback && process.nextTick(callback));
    const chunk = pending;
    pending = '';
    sink.write(chunk, callback);
  };
  const timer = setInterval(flush, FLUSH_MS).unref();
  return {
    /** Writes what is left and stops the timer (a server closed inside a process that goes on). */
    end() {
      clearInterval(timer);
      flush();
    },
    write(line: string) {
      pending += line;
      if (pending.length >= BUFFER_BYTES) flush();
    },
    flush,
  };
}

/** The request a line of the log or a problem belongs to: its id, and the problem code it was answered with. */
export interface RequestContext {
  id: string;
  problem?: string;
}
/** The request under way (AsyncLocalStorage): every pino line written while it runs carries its id. */
export const requestContext = new AsyncLocalStorage<RequestContext>();

// An X-Request-Id a client or proxy sends is kept when it is short and plain (it reaches every log
// line of the request); anything else is replaced by one of ours.
const REQUEST_ID = /^[A-Za-z0-9._:@+=\/-]{1,128}$/;
export const REQUEST_ID_MAX_CHARS = 128;
/** The id of a request: the one it was sent with when acceptable, else a new UUID. */
export const requestIdOf = (sent: string | string[] | undefined): string =>
  typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
/** Notes the problem code a request is answered with (metrics count requests by it). */
export const noteProblem = (code: string): void => {
  const context = requestContext.getStore();
  if (context) context.problem = code;
};

/** What every line says of its process: which one, where, which release. */
const BASE = { pid: process.pid, host: hostname(), version: BUILD.version };
const BASE_JSON = `"pid":${BASE.pid},"host":${JSON.stringify(BASE.host)},"version":${JSON.stringify(BASE.version)},`;

/** The fields of the one log line per request. */
export interface RequestLine {
  method: string;
  path: string;
  status: number;
  /** How long it took, in milliseconds (written to one decimal). */
  durationMs: number;
  /** When the request was finished, in milliseconds since the epoch (the gateway has read the clock already); now when absent. */
  time?: number | undefined;
}

/** A 5xx request line is written at warn: an outage's 503s stay visible under LOG_LEVEL=warn. */
const levelOf = (status: number) => (status >= 500 ? 40 : 30);

export interface Logging {
  logger: Logger;
  /** Writes the request line in the shape pino gives it, without pino's serializer: four known fields need none. */
  requestLog: (line: RequestLine, requestId?: string) => void;
  /** Writes the lines still buffered and stops flushing. */
  end: () => void;
}

/** Printable ASCII but `"` and `\`: JSON.stringify would only add the quotes. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** A JSON string literal: a usual method or path skips JSON.stringify (a runtime call: ~110 ns on a short path here, ~55 this way). */
const jsonString = (text: string) => (PLAIN.test(text) ? `"${text}"` : JSON.stringify(text));

/**
 * A duration to one decimal, the very text JSON writes for Math.round(ms * 10) / 10, made from
 * integers: writing a fraction cost ~80 ns a line, most of the line's cost.
 */
export function tenths(ms: number): string {
  const t = Math.round(ms * 10);
  const whole = Math.floor(t / 10);
  const tenth = t - whole * 10;
  return tenth === 0 ? `${whole}` : `${whole}.${tenth}`;
}
/** A line's end from its duration on, made once for durations under 100 ms (most answers'): no new string a request. */
const LINE_TAILS = Array.from({ length: 1000 }, (_, t) => `${tenths(t / 10)},"msg":"request"}\n`);
function lineTail(ms: number, requestId: string | undefined): string {
  if (requestId !== undefined) return `${tenths(ms)},"requestId":${jsonString(requestId)},"msg":"request"}\n`;
  const t = Math.round(ms * 10);
  return t >= 0 && t < LINE_TAILS.length ? LINE_TAILS[t]! : `${tenths(ms)},"msg":"request"}\n`;
}

/**
 * A line up to its duration, kept for the last time, method, path and status: tens of lines a
 * millisecond share it, so a line is two concatenations, not a dozen (each a string of its own:
 * the line cost ~460 bytes of garbage a request, now ~200).
 */
let last = { time: NaN, method: '', path: '', status: 0, head: '' };
/** A path's first characters logged: a request line stays about the size the docs give, whatever the path (up to 16 KiB). */
export const LOGGED_PATH_CHARS = 512;
const loggedPath = (path: string) =>
  path.length > LOGGED_PATH_CHARS ? `${path.slice(0, LOGGED_PATH_CHARS)}… (${path.length} characters)` : path;
function lineHead(l: RequestLine): string {
  const time = l.time ?? Date.now();
  if (time !== last.time || l.status !== last.status || l.path !== last.path || l.method !== last.method) {
    const head = `{"level":${levelOf(l.status)},"time":${time},${BASE_JSON}"method":${jsonString(l.method)},"path":${jsonString(loggedPath(l.path))},"status":${l.status},"ms":`;
    last = { time, method: l.method, path: l.path, status: l.status, head };
  }
  return last.head;
}

/** Structured JSON lines (flush before exit). Secrets never reach them: callers log chosen fields, never a request or a body. */
export function createLogging(level: string, sink: LogSink = process.stdout): Logging {
  const buffer = lineBuffer(sink);
  const logger = pino(
    {
      level,
      base: BASE,
      mixin: () => {
        const context = requestContext.getStore();
        return context ? { requestId: context.id } : {};
      },
    },
    buffer,
  );
  const write = (l: RequestLine, requestId?: string) => buffer.write(lineHead(l) + lineTail(l.durationMs, requestId));
  const requestLog = logger.isLevelEnabled('info')
    ? write
    : logger.isLevelEnabled('warn')
      ? (l: RequestLine, requestId?: string) => void (l.status >= 500 && write(l, requestId))
      : () => {};
  return { logger, requestLog, end: buffer.end };
}
