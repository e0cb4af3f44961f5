import { connect, type Socket } from 'node:net';
import type { TestServer } from '../helpers/server.ts';

/** A raw connection to the server: what it sends is written as is, what comes back is collected. */
export interface RawClient {
  socket: Socket;
  /** Everything received so far (latin1). */
  received(): string;
  /** Resolves with what was received once it matches `pattern` (or rejects after `ms`). */
  until(pattern: RegExp, ms?: number): Promise<string>;
  /** Resolves when the server closed the connection; `error` is the socket error, if any. */
  closed: Promise<{ error?: NodeJS.ErrnoException }>;
}

/**
 * `allowHalfOpen`: the client keeps its side open after the server's FIN, as one still sending would.
 * `localAddress`: the client's address on the loopback /8 (127.0.0.1 by default), as another client.
 */
export function rawClient(
  server: TestServer,
  { allowHalfOpen = false, localAddress = '127.0.0.1' } = {},
): Promise<RawClient> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen, localAddress });
    let out = '';
    const waiters = new Set<() => void>();
    socket.on('data', (d) => {
      out += d.toString('latin1');
      for (const w of waiters) w();
    });
    let error: NodeJS.ErrnoException | undefined;
    socket.on('error', (e) => (error = e));
    const closed = new Promise<{ error?: NodeJS.ErrnoException }>((done) =>
      socket.once('close', () => done(error ? { error } : {})),
    );
    const until = (pattern: RegExp, ms = 5000) =>
      new Promise<string>((done, fail) => {
        const check = () => {
          if (!pattern.test(out)) return;
          cleanup();
          done(out);
        };
        const timer = setTimeout(() => {
          cleanup();
          fail(new Error(`no ${pattern} within ${ms} ms; received: ${out.slice(0, 300) || '(nothing)'}`));
        }, ms);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        void closed.then(() => setTimeout(check, 0));
        check();
      });
    socket.once('connect', () => resolve({ socket, received: () => out, until, closed }));
    socket.once('error', reject);
  });
}

/** The status code at the start of a raw answer. */
export const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
/** The JSON body of a raw answer with Content-Length. */
export const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

/** Resolves with the first log line from index `from` on that matches, as soon as the server prints it, or fails after `ms`. */
export function logLine(
  server: TestServer,
  from: number,
  match: (line: string) => boolean,
  ms = 5000,
): Promise<string> {
  return server.waitForLog(match, { from, timeoutMs: ms });
}
