import { randomUUID } from 'node:crypto';
import type { Keep } from '../../api/http/idempotency.ts';
import type { openMemoryStore } from '../../api/store/index.ts';

/** A route that writes: its answer goes into the store with the write (a feed entry), as the real routes do. */
export const writes =
  (store: ReturnType<typeof openMemoryStore>, answer: { status: number; body: unknown }) =>
  async (keep: Keep | undefined) => {
    await store.feed.add(
      {
        id: randomUUID(),
        name: 'n',
        kind: 'message',
        message: 'm',
        verified: false,
        wall: false,
        createdAt: new Date().toISOString(),
      },
      keep?.(answer),
    );
    return answer;
  };
