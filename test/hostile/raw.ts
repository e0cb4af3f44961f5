import { readFileSync } from 'node:fs';
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

/**
 * The kernel's state of this IPv4 client's TCP connection, as /proc/net/tcp gives it ('01'
 * ESTABLISHED, '08' CLOSE_WAIT: the server sent its FIN), or null once it is gone (a reset); with
 * `side: 'server'`, of the server's end of it ('04' FIN_WAIT1: closed with answers still unsent). A
 * paused socket emits nothing until it reads again, so a test that must not read asks the kernel.
 */
export function tcpState(socket: Socket, side: 'client' | 'server' = 'client'): string | null {
  const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');
  const end = (address: string, port: number) =>
    `${address
      .split('.')
      .map(Number)
      .reverse()
      .map((n) => hex(n, 2))
      .join('')}:${hex(port, 4)}`;
  const client = end(socket.localAddress!, socket.localPort!);
  const server = end(socket.remoteAddress!, socket.remotePort!);
  const [local, remote] = side === 'client' ? [client, server] : [server, client];
  const row = readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((fields) => fields[1] === local && fields[2] === remote);
  return row?.[3] ?? null;
}
