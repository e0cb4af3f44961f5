import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Bytes handed to the connection that the kernel has not taken yet: a slow reader takes a large
 * answer a piece at a time, and only this count moves meanwhile (node's own socket timeout reads it
 * too, as its handle's `writeQueueSize`).
 */
const queued = (socket: Socket) =>
  (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle?.writeQueueSize ?? 0;

/**
 * The server still owes this connection an answer it has not started handing over (node's http
 * server keeps the response in flight as the socket's `_httpMessage`): the wait is the server's,
 * not the client's. A body the client stops sending meanwhile is BODY_IDLE_TIMEOUT_MS's to end.
 */
const answerOwed = (socket: Socket) => {
  const res = (socket as Socket & { _httpMessage?: { writableEnded: boolean } | null })._httpMessage;
  return res != null && !res.writableEnded && queued(socket) === 0;
};

/** How often connections are looked at, at most (a stall is ended between `ms` and `ms` plus this). */
const SWEEP_MS = 1000;

/**
 * Closes connections that neither send nor take a byte for `ms` (SEND_TIMEOUT_MS): a stalled
 * reader holds its socket and buffers no longer. Node's socket timeout (`server.timeout`) does the
 * same, but re-arms a timer on every read and write of every request: about 0.3 µs of a static
 * read's CPU here, against one look per connection per sweep. A connection whose byte counts have
 * not moved since `ms` ago is destroyed, unless the server is still working on its answer; node's
 * keep-alive timeout still closes idle ones first.
 */
export function closeStalledConnections(server: Server, ms: number): { stop(): void } {
  const open = new Map<Socket, { bytes: number; since: number }>();
  server.on('connection', (socket: Socket) => {
    open.set(socket, { bytes: 0, since: performance.now() });
    socket.once('close', () => open.delete(socket));
  });
  const sweep = () => {
    const now = performance.now();
    for (const [socket, seen] of open) {
      const bytes = socket.bytesRead + (socket.bytesWritten ?? 0) - queued(socket);
      if (bytes !== seen.bytes || answerOwed(socket)) {
        seen.bytes = bytes;
        seen.since = now;
      } else if (now - seen.since >= ms) socket.destroy();
    }
  };
  const timer = setInterval(sweep, Math.max(10, Math.min(SWEEP_MS, ms / 4))).unref();
  return { stop: () => clearInterval(timer) };
}
