import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { createBandwidth, pauser } from './bandwidth.ts';
import { declaresBody } from './body.ts';

// The lingering close: what becomes of a connection answered before its request body was read
// (413, 415, 429, 408...). Its state is the process's: every gateway of it shares the bounds.

/**
 * How long, and how many bytes, a connection whose body was left unread is read and discarded after
 * its answer, so that the client reads the answer instead of a reset (nginx: lingering_close); and
 * how fast, over all such connections together, so that a flood of refused uploads costs the
 * server a bounded share of its CPU (the clients' TCP windows close and they wait).
 */
export const LINGER_MS = 5000;
const LINGER_BYTES = 8 * 1024 * 1024;
export const LINGER_BYTES_PER_SECOND = 8 * 1024 * 1024;
/**
 * Lingering connections at once, over the process and from one client (its address; IPv6: its
 * /64): at either, the next answers wait (below); past the waiting caps too, that set's oldest is
 * closed. Its answer went out first, so by then its client has it. What a flood of refused
 * clients holds (sockets, the kernel's receive buffers, up to several MB each: about 1 GB for 256
 * in bench:hostile, near the kernel's TCP memory pressure, which slows every connection of the
 * machine) is bounded, and one client's flood cycles through its own lingering connections, not
 * everyone's.
 */
export const LINGER_MAX_CONNECTIONS = 256;
export const LINGER_MAX_PER_CLIENT = 16;
/**
 * An answer that would linger while its client holds LINGER_MAX_PER_CLIENT lingering connections,
 * or the process LINGER_MAX_CONNECTIONS, waits with its connection unread until one of those closes
 * (its client hung up, or its LINGER_MS ran out), at most LINGER_MS; the oldest waiting answer
 * whose client may linger goes first. A flood of refused uploads gets its refusals at the pace its
 * earlier ones drain, not as fast as it can open connections, and while it waits its connections
 * cost the server nothing but a socket (the request's first read and the kernel's receive window
 * of an unread connection: about 200 KB). Past LINGER_MAX_WAITING_PER_CLIENT from one client, or
 * LINGER_MAX_WAITING over the process, an answer is sent at once and closes the oldest lingering
 * connection of its client (or of all).
 */
export const LINGER_MAX_WAITING_PER_CLIENT = 16;
export const LINGER_MAX_WAITING = 256;

const budget = createBandwidth(LINGER_BYTES_PER_SECOND);
/** The lingering connections, oldest first (a Map keeps the order of insertion), with their client's key. */
const lingering = new Map<Socket, string>();
const lingeringByClient = new Map<string, Set<Socket>>();
/** The answers waiting for a lingering slot, oldest first: each sends its own; with their client's key. */
const waiting = new Map<() => void, string>();
const waitingByClient = new Map<string, number>();

/** Whether an answer sent now leaves its request's body unread (and so closes with a linger). */
function leavesBodyUnread(req: IncomingMessage): boolean {
  // A request without a body may not be 'complete' yet when it is refused at once: it keeps its connection.
  return !req.complete && declaresBody(req);
}

/** Whether one more connection of this client may linger now, within both caps. */
const mayLinger = (key: string) =>
  (lingeringByClient.get(key)?.size ?? 0) < LINGER_MAX_PER_CLIENT && lingering.size < LINGER_MAX_CONNECTIONS;

/**
 * Runs `send` (which writes the answer to `req`) now, or, when the answer would linger past a cap,
 * once a lingering connection closes or LINGER_MS has passed. Nothing is sent if the client leaves
 * meanwhile. `key`: the request's client key (api/http/client.ts), as the gateway resolved it.
 */
export function whenLingerSlot(req: IncomingMessage, key: string, send: () => void): void {
  if (!leavesBodyUnread(req)) return send();
  const mine = waitingByClient.get(key) ?? 0;
  if (mayLinger(key) || mine >= LINGER_MAX_WAITING_PER_CLIENT || waiting.size >= LINGER_MAX_WAITING) return send();
  waitingByClient.set(key, mine + 1);
  const done = (answer: boolean) => {
    if (!waiting.delete(go)) return;
    const left = waitingByClient.get(key)! - 1;
    if (left === 0) waitingByClient.delete(key);
    else waitingByClient.set(key, left);
    clearTimeout(timer);
    req.socket.off('close', gone);
    if (answer) send();
  };
  const go = () => done(true);
  const gone = () => done(false);
  waiting.set(go, key);
  const timer = setTimeout(go, LINGER_MS);
  timer.unref();
  req.socket.once('close', gone);
}

/** A lingering connection closed by its client or its time (not for a cap): the oldest answer that may linger now goes. */
function handOverSlot(): void {
  for (const [go, key] of waiting) if (mayLinger(key)) return go();
}

/** Headers of an answer, plus `Connection: close` and a lingering close when the request body was left unread. */
export function closing(req: IncomingMessage, key: string, headers: Record<string, string>): Record<string, string> {
  if (!leavesBodyUnread(req)) return headers;
  lingerAfterAnswer(req, key);
  return { ...headers, Connection: 'close' };
}

/**
 * After an answer sent before the request body was read, the answer says `Connection: close`;
 * node would then close the socket with the client's bytes unread, which makes the kernel reset it
 * and the client may lose the answer. Instead, stop writing, discard what still comes unparsed (at
 * most LINGER_BYTES, for at most LINGER_MS, at the shared LINGER_BYTES_PER_SECOND,
 * LINGER_MAX_CONNECTIONS at once and LINGER_MAX_PER_CLIENT from one client), then close.
 */
function lingerAfterAnswer(req: IncomingMessage, key: string): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  socket.destroySoon = function lingeringClose(this: Socket) {
    // The HTTP parser would read the rest of the body byte by byte: nothing in it is wanted.
    this.removeAllListeners('data');
    // node dumps an unread request once its answer is finished, and a request being read resumes its
    // socket whatever the budget's pauses say: the socket's pace is the lingering budget's alone.
    req._read = () => {};
    this.end();
    const flow = pauser(this);
    let drained = 0;
    this.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      // A client still sending this much after its answer is not listening: let it block.
      if (drained > LINGER_BYTES) flow.pause('enough');
      else flow.wait(budget.take(chunk.length));
    });
    // Under a flood the budget is spent already: not even a first read (a 64 KiB buffer) until it refills.
    flow.wait(budget.take(0));
    flow.start();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    addLingering(this, key);
    this.once('close', () => {
      // Closed by its client or its time, not for a cap: the slot it leaves is a waiting answer's.
      if (forgetLingering(this)) handOverSlot();
      clearTimeout(timer);
      flow.stop();
    });
  };
}

/** Counts `socket` as lingering; closes the oldest of its client's, or of all, past their cap. */
function addLingering(socket: Socket, key: string): void {
  lingering.set(socket, key);
  const mine = lingeringByClient.get(key) ?? new Set<Socket>();
  lingeringByClient.set(key, mine);
  mine.add(socket);
  const oldest =
    mine.size > LINGER_MAX_PER_CLIENT
      ? mine.values().next().value
      : lingering.size > LINGER_MAX_CONNECTIONS
        ? lingering.keys().next().value
        : undefined;
  if (!oldest) return;
  forgetLingering(oldest);
  oldest.destroy();
}

/** Stops counting `socket`; false when it was no longer counted (closed for a cap). */
function forgetLingering(socket: Socket): boolean {
  const key = lingering.get(socket);
  if (key === undefined) return false;
  lingering.delete(socket);
  const mine = lingeringByClient.get(key)!;
  mine.delete(socket);
  if (mine.size === 0) lingeringByClient.delete(key);
  return true;
}
