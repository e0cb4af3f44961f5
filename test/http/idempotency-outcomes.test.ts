import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createIdempotency } from '../../api/http/idempotency.ts';
import { IdempotencyKeyTaken, StoreUnavailableError } from '../../api/store/errors.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import type { IdempotencyStore } from '../../api/store/types.ts';
import { waitFor } from '../helpers/wait.ts';
import { writes } from '../helpers/writes.ts';

// What the Idempotency-Key does when the store stops answering in the middle of a write.
const body = new TextEncoder().encode('{"name":"x"}');

describe('Idempotency-Key when the store does not answer', () => {
  it('releases a claim whose release failed once the store answers again, so the retry runs instead of waiting out the claim', async () => {
    const store = openMemoryStore();
    let answering = true;
    const flaky: IdempotencyStore = {
      ...store.idempotency,
      release: (keyHash) =>
        answering
          ? store.idempotency.release(keyHash)
          : Promise.reject(new StoreUnavailableError(new Error('no answer'), 'database-unavailable')),
    };
    const idempotency = createIdempotency(flaky, { releaseRetryMs: 20 });
    const k = randomUUID();
    // The write meets a database that stopped answering: 503, and the claim cannot be released either.
    answering = false;
    const unknown = new StoreUnavailableError(new Error('Connection terminated unexpectedly'), 'outcome-unknown');
    await expect(idempotency('oath', k, body, () => Promise.reject(unknown))).rejects.toBe(unknown);
    await expect(idempotency('oath', k, body, writes(store, { status: 201, body: 'second' }))).rejects.toMatchObject({
      status: 409,
    });
    answering = true;
    const retry = await waitFor(
      () => idempotency('oath', k, body, writes(store, { status: 201, body: 'second' })).catch((e: unknown) => e),
      {
        until: (a) => !(a instanceof Error) && (a as { status: number }).status === 201,
        timeoutMs: 2000,
        what: 'the retry runs',
      },
    );
    expect(retry).toEqual({ status: 201, body: 'second', replayed: false });
  });

  it('answers what an earlier run with the key committed late, when this run finds its record taken (it wrote nothing)', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    // The first run's client was told its outcome was unknown and its claim ended; its COMMIT lands
    // while the retry runs (its record is the one below, sealed under the same key), and the
    // store refuses the retry's own record, so the retry's write is rolled back.
    const answer = await idempotency('oath', k, body, async (keep) => {
      const committedLate = keep!({ status: 201, body: 'first' });
      await store.idempotency.put(committedLate);
      throw new IdempotencyKeyTaken(committedLate.keyHash);
    });
    expect(answer).toEqual({ status: 201, body: 'first', replayed: true });
  });
});
