import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { IdempotencyRecord, IdempotencyStore } from '../store/types.ts';
import { HttpProblem } from './problem.ts';

/** What a write answered, as replayed for a repeated Idempotency-Key. */
export interface StoredAnswer {
  status: number;
  body: unknown;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

// The stored answer may hold a secret (the oath's passport number), so it is encrypted under a key
// derived from the Idempotency-Key, which only the client keeps; the store sees a hash of the key.
function keyFor(idempotencyKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', idempotencyKey, 'agentnode-idempotency', 'answer', 32));
}
function seal(idempotencyKey: string, answer: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(idempotencyKey), iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}
function unseal(idempotencyKey: string, sealed: string): unknown {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(idempotencyKey), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'));
}

const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency-Key handling (IETF httpapi draft): the same key and body replay the first answer;
 * while the first is still running, 409; the same key with another body, 422.
 */
export function createIdempotency(store: IdempotencyStore) {
  /** The stored answer replayed, or 422 when the key came with another body. */
  const replay = (previous: IdempotencyRecord, key: string, fingerprint: string): StoredAnswer & { replayed: boolean } => {
    if (previous.fingerprint !== fingerprint) throw new HttpProblem(422, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different body.');
    return { status: previous.status, body: unseal(key, previous.sealed), replayed: true };
  };

  return async function withIdempotency(
    route: string,
    key: string | null,
    bodyBytes: Uint8Array,
    run: () => Promise<StoredAnswer>,
  ): Promise<StoredAnswer & { replayed: boolean }> {
    if (key === null) return { ...(await run()), replayed: false };
    if (!KEY.test(key)) throw new HttpProblem(400, 'INVALID_IDEMPOTENCY_KEY', 'Idempotency-Key must be 1-255 visible ASCII characters.');
    const keyHash = sha256(`${route}\n${key}`);
    const fingerprint = createHash('sha256').update(bodyBytes).digest('hex');
    const previous = await store.get(keyHash, new Date());
    if (previous) return replay(previous, key, fingerprint);
    // The claim is the store's, so a retry on another process sees it too.
    if (!(await store.claim(keyHash, new Date()))) {
      throw new HttpProblem(409, 'IDEMPOTENCY_IN_FLIGHT', 'A request with this Idempotency-Key is still being processed. Retry when it has finished.');
    }
    try {
      // A run elsewhere may have finished between the read above and the claim.
      const finished = await store.get(keyHash, new Date());
      if (finished) return replay(finished, key, fingerprint);
      const answer = await run();
      await store.put({ keyHash, fingerprint, status: answer.status, sealed: seal(key, answer.body), createdAt: new Date().toISOString() });
      return { ...answer, replayed: false };
    } finally {
      // A claim that cannot be released lapses after IDEMPOTENCY_CLAIM_MS; it must not hide the answer.
      await store.release(keyHash).catch(() => undefined);
    }
  };
}
export type Idempotency = ReturnType<typeof createIdempotency>;
