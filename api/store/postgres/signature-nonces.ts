import { hash } from 'node:crypto';
import type { Logger } from '../../log.ts';
import { reasonOf, type GuardedPool } from './pool.ts';

/** A process deletes expired nonces at most this often, when it claims one. */
export const NONCE_PRUNE_MS = 60 * 1000;
// Expired rows deleted by one statement at most, so a prune never holds the table long; a full batch
// makes the next claim prune again.
const NONCE_PRUNE_BATCH = 10_000;

/**
 * Web Bot Auth nonces claimed once by all the processes on one database: a row per (signer, nonce)
 * until its signature expires. The nonce is kept as its SHA-256 (a client chooses its length; an
 * index row cannot be longer than a third of a page). Liveness is the database's clock, one for
 * every process. Each claim is one statement through the guarded pool, so it is bounded by its
 * timeouts and breaker and, like every call here, holds no session state (PgBouncer).
 */
export function signatureNonces(pool: GuardedPool, logger: Logger | undefined) {
  let nextPrune = 0;

  /**
   * Deletes a batch of expired rows, not awaited by the claim that started it. Concurrent prunes of
   * other processes skip the rows one has locked instead of waiting for it.
   */
  function prune(): void {
    if (Date.now() < nextPrune) return;
    nextPrune = Date.now() + NONCE_PRUNE_MS;
    pool
      .write(
        `DELETE FROM signature_nonces WHERE (signer, nonce_hash) IN (SELECT signer, nonce_hash FROM signature_nonces
         WHERE expires_at < now() LIMIT ${NONCE_PRUNE_BATCH} FOR UPDATE SKIP LOCKED)`,
      )
      .then(
        (r) => {
          if (r.rowCount === NONCE_PRUNE_BATCH) nextPrune = 0;
        },
        // Rows left expired are taken over by their next claim and deleted by the next prune.
        (error: unknown) =>
          logger?.debug({ reason: reasonOf(error) }, 'PostgreSQL: expired Web Bot Auth nonces not deleted this time'),
      );
  }

  return {
    /**
     * The first claim of a live nonce inserts its row; a row whose signature expired (not deleted
     * yet) is taken over, as the nonce is free again. True when this call claimed it.
     */
    async claim(signer: string, nonce: string, expiresAt: number): Promise<boolean> {
      const r = await pool.write(
        `INSERT INTO signature_nonces AS n VALUES ($1, $2, to_timestamp($3)) ON CONFLICT (signer, nonce_hash)
         DO UPDATE SET expires_at = excluded.expires_at WHERE n.expires_at < now() RETURNING 1`,
        [signer, hash('sha256', nonce, 'base64url'), expiresAt],
      );
      prune();
      return r.rowCount === 1;
    },
  };
}
