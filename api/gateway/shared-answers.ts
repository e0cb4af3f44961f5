import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { LRUCache } from 'lru-cache';

/** One answer kept to be sent again: its bytes are one Buffer every socket shares. */
export interface SharedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Live documents many clients read at once (the bot wall and its JSON). While an answer of one of
 * them is still being sent to someone, a new reader of the same URL and coding gets the answer made
 * at most `ttlMs` ago, from the same Buffer: a thousand slow readers of the wall hold one copy of
 * it, not a thousand, and the server builds it about once a second, not once a request. A reader
 * alone is always answered fresh. At most `max` URLs are kept (a client varying the query cannot
 * grow it).
 */
export function createSharedAnswers({ ttlMs = 1000, max = 64 } = {}) {
  const kept = new LRUCache<string, SharedAnswer>({ max, ttl: ttlMs, ttlAutopurge: false });
  let sending = 0;
  // A pipelined answer still queued (no socket of its own yet) when its connection closes never
  // emits 'close': its connection's one listener ends it (one per connection, not per queued answer).
  const pending = new WeakMap<Socket, Set<() => void>>();
  return {
    /** Counts `res` as a reader until it is finished or its client left. */
    reading(req: IncomingMessage, res: ServerResponse): void {
      sending++;
      const socket = req.socket;
      let waiting = pending.get(socket);
      if (!waiting) {
        const set = (waiting = new Set());
        pending.set(socket, set);
        socket.once('close', () => {
          for (const finish of set) finish();
        });
      }
      const finished = () => {
        if (!waiting.delete(finished)) return;
        sending--;
      };
      waiting.add(finished);
      res.once('close', finished);
    },
    /** The kept answer of `key`, when someone else is still being sent one. */
    get: (key: string) => (sending > 1 ? kept.get(key) : undefined),
    set: (key: string, answer: SharedAnswer) => void (answer.status === 200 && kept.set(key, answer)),
  };
}
export type SharedAnswers = ReturnType<typeof createSharedAnswers>;
