import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { clientKey } from '../net/address.ts';

/**
 * How long a connection over its client's cap may stay without sending the request it is refused
 * on (a connection that opens and says nothing is the cheapest thing to hold open by the thousand).
 */
export const OVER_CAP_MS = 5000;

/**
 * Counts open connections per client (its address, an IPv6 /64) and marks those past
 * `perClient`: their first request is answered 429 `TOO_MANY_CONNECTIONS` and the connection
 * closed, so the client reads why instead of a reset. A trusted proxy's connections are its
 * clients', not its own, and are not counted (the proxy bounds its clients).
 */
export function limitConnections(server: Server, perClient: number, trusts: (address: string) => boolean) {
  const open = new Map<string, number>();
  const over = new WeakSet<Socket>();
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? '';
    if (trusts(peer)) return;
    const key = clientKey(peer);
    const count = (open.get(key) ?? 0) + 1;
    open.set(key, count);
    socket.once('close', () => {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
    if (count <= perClient) return;
    over.add(socket);
    socket.setTimeout(OVER_CAP_MS);
  });
  return {
    perClient,
    /** Whether this connection is past its client's cap. */
    isOver: (socket: Socket) => over.has(socket),
  };
}
