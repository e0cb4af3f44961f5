import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { LINGER_MS } from './lingering.ts';

// What node's HTTP server does when a connection's next request cannot be read ('clientError'):
// a malformed request, headers past maxHeaderSize, a request past its timeout. Its own handler
// writes the refusal and destroys the socket at once, also when the requests read before it on
// that connection (pipelined, in the same packet) are still being answered: their writes were
// done, their answers lost (an oath's one-time passport). This handler sends the same refusal, but
// after those answers.

/** node's own refusals, byte for byte (lib/_http_server.js): by error code, else 400. */
const STATUS_OF: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};
const refusalOf = (error: NodeJS.ErrnoException): string => {
  const status = STATUS_OF[error.code ?? ''] ?? 400;
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n\r\n`;
};

/**
 * node's server gives a connection's answers its socket one at a time, in request order: the one
 * being written is `_httpMessage` (node's own handler reads it too); the next is attached when it
 * finishes, and none is left once every request read so far is answered.
 */
type ServerSocket = Socket & { _httpMessage?: ServerResponse | null };

/** Connections whose refusal waits for the answers before it: later reports of the same error are no news. */
const waiting = new WeakSet<Socket>();

/**
 * The answer to wait for before refusing: the pending answer of a request read whole. An answer
 * whose request is still being read is that of the request the error is about (its client left
 * mid-body, its body cannot be read): nothing before it is left to answer.
 */
function answerBefore(socket: Socket): ServerResponse | null {
  const answer = (socket as ServerSocket)._httpMessage;
  return answer && answer.req.complete && socket.writable ? answer : null;
}

/**
 * server.on('clientError', answerClientError). With no answer of a whole request pending on the
 * connection, node's own behaviour: the refusal (unless an answer has begun), then the socket
 * destroyed. With such answers pending, nothing more is read; each is sent in turn; then the
 * refusal, and the connection closes (what the client still sends is read and dropped for at most
 * LINGER_MS, so that the close does not reset the answers away). The refusal waits as long as
 * those answers take: no longer than they would have without it.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (waiting.has(socket)) return;
  if (!answerBefore(socket)) {
    if (socket.writable && !(socket as ServerSocket)._httpMessage?.headersSent) socket.write(refusalOf(error));
    return void socket.destroy(error);
  }
  waiting.add(socket);
  // The parser reads no further than the malformed request.
  socket.pause();
  const next = (): void => {
    if (socket.destroyed) return;
    // node attaches the next answer in its own 'finish' listener, which runs before this one.
    const answer = answerBefore(socket);
    if (answer) return void answer.once('finish', () => process.nextTick(next));
    // An answer that said Connection: close has ended the connection, and closes it its own way.
    if (!socket.writable) return;
    // The answer of the request the error is about may have begun: a refusal would corrupt it.
    if ((socket as ServerSocket)._httpMessage?.headersSent) return void socket.destroy();
    socket.end(refusalOf(error));
    socket.once('end', () => socket.destroy());
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.resume();
  };
  next();
}
