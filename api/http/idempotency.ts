import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { isIdempotencyKeyTaken } from '../store/errors.ts';
import {
  IDEMPOTENCY_CLAIM_MS,
  IDEMPOTENCY_LEASE_MS,
  type IdempotencyRecord,
  type IdempotencyStore,
} from '../store/types.ts';
import { HttpProblem } from './problem.ts';

/** What a write answered, as replayed for a repeated Idempotency-Key. */
export interface StoredAnswer {
  status: number;
  body: unknown;
}

/**
 * Given to a keyed write: seals the answer it is about to give into the idempotency record that its
 * store write commits with it (one journal entry, one transaction). A route that changes nothing
 * never calls it.
 */
export type Keep = (answer: StoredAnswer) => IdempotencyRecord;

/** The largest answer (JSON bytes) an Idempotency-Key keeps; a keyed write whose answer is larger is refused before it writes. */
export const IDEMPOTENCY_ANSWER_MAX_BYTES = 16 * 1024;
// Expired records are pruned at most this often (and on the first keyed request).
const PRUNE_EVERY_MS = 60 * 1000;
// A claim the store could not release (it did not answer) is tried again this often until it lapses.
const RELEASE_RETRY_MS = 1000;
// A run renews its claim's lease this often (a third of it: two renewals may fail before it lapses).
const RENEW_EVERY_MS = IDEMPOTENCY_LEASE_MS / 3;
/** Seconds a 409 IDEMPOTENCY_IN_FLIGHT asks the client to wait: most runs end within it. */
export const IN_FLIGHT_RETRY_AFTER_S = 1;
// Claims waiting for their release at most; past it they lapse on their own after IDEMPOTENCY_CLAIM_MS.
const RELEASES_PENDING_MAX = 10_000;

const sha256 = (s: string | Uint8Array) => createHash('sha256').update(s).digest('hex');

// The stored answer may hold a secret (the oath's passport number), so it is encrypted under a key
// derived from the Idempotency-Key, which only the client keeps; the store sees a hash of the key.
// That is only as strong as the key is unguessable, hence the rule below.
function keyFor(idempotencyKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', idempotencyKey, 'agentnode-idempotency', 'answer', 32));
}
function seal(idempotencyKey: string, json: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(idempotencyKey), iv);
  const data = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}
function unseal(idempotencyKey: string, sealed: string): unknown {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(idempotencyKey), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{12}$/i;
const HEX = /^[0-9a-f]+$/i;
const BASE64 = /^[A-Za-z0-9+/_-]+$/;
// Random keys of the accepted lengths show at least this many distinct characters (all but about
// one in 10^12 of them); fewer means a pattern such as "aaaa…" or "key-key-key…".
const MIN_DISTINCT = 6;

/**
 * Whether an Idempotency-Key is unguessable by its form (randomness cannot be seen, only its
 * absence): a UUID of version 4 (122 random bits; other versions carry a time or an address), or at
 * least 128 bits written as 32+ hex or 22+ base64/base64url characters (padding `=` not counted),
 * with at least 6 distinct characters, 255 characters at most.
 */
export function isUnguessableKey(key: string): boolean {
  if (key.length > 255) return false;
  const uuid = UUID.exec(key);
  if (uuid) return uuid[1] === '4' && /[89ab]/i.test(uuid[2]!) && new Set(key.toLowerCase()).size >= MIN_DISTINCT;
  const digits = key.replace(/=+$/, '');
  if (!BASE64.test(digits)) return false;
  const enough = HEX.test(digits) ? digits.length >= 32 : digits.length >= 22;
  return enough && new Set(digits).size >= MIN_DISTINCT;
}

function guessableKey(): HttpProblem {
  return new HttpProblem(
    'INVALID_IDEMPOTENCY_KEY',
    'Idempotency-Key must be unguessable, because it unlocks the answer it keeps (an oath answer holds the passport): ' +
      'send a random UUID version 4 (crypto.randomUUID(), Python uuid.uuid4(), uuidgen -r) or at least 128 random bits as 32+ hex ' +
      'or 22+ base64url characters (openssl rand -hex 16), at most 255 characters. Make a new one for each write; reuse it only to retry that write.',
    { extra: { example: randomUUID() } },
  );
}

export interface IdempotencyOptions {
  /** The clock (tests move it). */
  now?: () => Date;
  /** How long to wait before releasing again a claim whose release failed. */
  releaseRetryMs?: number;
}

/**
 * Idempotency-Key handling (IETF httpapi draft): the same key and body replay the first answer;
 * while the first is still running, 409; the same key with another body, 422. A write's record is
 * committed with the write through `keep`, so a 503 keeps neither and a 2xx both.
 */
export function createIdempotency(
  store: IdempotencyStore,
  { now = () => new Date(), releaseRetryMs = RELEASE_RETRY_MS }: IdempotencyOptions = {},
) {
  let prunedAt = -Infinity;
  /**
   * Claims whose release failed (the store did not answer), with when they lapse anyway. Their
   * retries would answer 409 until then: each is released again once the store answers.
   */
  const unreleased = new Map<string, number>();
  let releasing: NodeJS.Timeout | undefined;
  function releaseLater(keyHash: string): void {
    if (unreleased.size >= RELEASES_PENDING_MAX) return;
    // Given up well before the claim lapses, so a release never ends a claim another run took over since.
    unreleased.set(keyHash, Date.now() + (store.renew ? IDEMPOTENCY_LEASE_MS : IDEMPOTENCY_CLAIM_MS) / 2);
    releasing ??= setTimeout(releaseAgain, releaseRetryMs).unref();
  }
  async function releaseAgain(): Promise<void> {
    for (const [keyHash, lapses] of unreleased) {
      if (Date.now() > lapses) unreleased.delete(keyHash);
      else if (
        await store.release(keyHash).then(
          () => true,
          () => false,
        )
      )
        unreleased.delete(keyHash);
      // Still not answering: the rest waits for the next round.
      else break;
    }
    releasing = unreleased.size > 0 ? setTimeout(releaseAgain, releaseRetryMs).unref() : undefined;
  }

  /** Expired records leave memory and disk; a failed prune is retried at the next one. */
  function prune(at: Date): void {
    if (at.getTime() - prunedAt < PRUNE_EVERY_MS) return;
    prunedAt = at.getTime();
    void store.prune(at).catch(() => undefined);
  }

  return async function withIdempotency(
    route: string,
    key: string | null,
    bodyBytes: Uint8Array,
    run: (keep: Keep | undefined) => Promise<StoredAnswer>,
    /** Turns a kept answer into the answer replayed (a route may keep less than it answered). */
    replayKept: (kept: StoredAnswer) => Promise<StoredAnswer> = async (kept) => kept,
  ): Promise<StoredAnswer & { replayed: boolean }> {
    if (key === null) return { ...(await run(undefined)), replayed: false };
    if (!isUnguessableKey(key)) throw guessableKey();
    const keyHash = sha256(`${route}\n${key}`);
    const fingerprint = sha256(bodyBytes);
    const at = now();
    prune(at);

    /** The first answer again, or 422 when the key came with another body. */
    const repeat = async (previous: IdempotencyRecord): Promise<StoredAnswer & { replayed: boolean }> => {
      if (previous.fingerprint !== fingerprint)
        throw new HttpProblem('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different body.');
      // A route that changed nothing kept no answer: running it again is the replay.
      if (previous.sealed === null) return { ...(await run(undefined)), replayed: true };
      return { ...(await replayKept({ status: previous.status, body: unseal(key, previous.sealed) })), replayed: true };
    };

    const previous = await store.get(keyHash, at);
    if (previous) return repeat(previous);
    // The claim is the store's, so a retry on another process sees it too.
    if (!(await store.claim(keyHash, at))) {
      throw new HttpProblem(
        'IDEMPOTENCY_IN_FLIGHT',
        `A request with this Idempotency-Key is still being processed. Retry after ${IN_FLIGHT_RETRY_AFTER_S} s: a run whose process died is taken over within ${IDEMPOTENCY_LEASE_MS / 1000} s.`,
        { headers: { 'Retry-After': String(IN_FLIGHT_RETRY_AFTER_S) } },
      );
    }
    // The lease is renewed while the run lasts; a process that dies stops renewing it.
    const renewing = store.renew
      ? setInterval(() => void store.renew!(keyHash, now()).catch(() => undefined), RENEW_EVERY_MS).unref()
      : undefined;
    try {
      // A run elsewhere may have finished between the read above and the claim.
      const finished = await store.get(keyHash, now());
      if (finished) return repeat(finished);
      let kept = false;
      const keep: Keep = (answer) => {
        const json = JSON.stringify(answer.body);
        const bytes = Buffer.byteLength(json);
        if (bytes > IDEMPOTENCY_ANSWER_MAX_BYTES) {
          throw new HttpProblem(
            'IDEMPOTENT_ANSWER_TOO_LARGE',
            `This answer is ${bytes} bytes; an Idempotency-Key keeps at most ${IDEMPOTENCY_ANSWER_MAX_BYTES}. Nothing was written: send a smaller request, or send it without Idempotency-Key.`,
          );
        }
        kept = true;
        return { keyHash, fingerprint, status: answer.status, sealed: seal(key, json), createdAt: now().toISOString() };
      };
      try {
        const answer = await run(keep);
        // The route wrote nothing: the record keeps the key to its body, not the answer.
        if (!kept)
          await store.put({
            keyHash,
            fingerprint,
            status: answer.status,
            sealed: null,
            createdAt: now().toISOString(),
          });
        return { ...answer, replayed: false };
      } catch (error) {
        // An earlier run with this key, whose client was told its outcome was unknown, committed
        // after all (its claim had ended): this run wrote nothing, and that run's answer is the answer.
        if (!isIdempotencyKeyTaken(error)) throw error;
        const first = await store.get(keyHash, now());
        if (!first) throw error;
        return repeat(first);
      }
    } finally {
      clearInterval(renewing);
      // A claim that cannot be released now is released when the store answers again (or lapses
      // after IDEMPOTENCY_CLAIM_MS); it must not hide the answer.
      await store.release(keyHash).catch(() => releaseLater(keyHash));
    }
  };
}
export type Idempotency = ReturnType<typeof createIdempotency>;
