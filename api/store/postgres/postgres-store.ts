import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Message } from '../../schemas/citizenship.ts';
import type { Logger } from '../../log.ts';
import { isId } from '../../ids.ts';
import { IdempotencyKeyTaken, StoreUnavailableError } from '../errors.ts';
import { decodeCursor, decodeLogCursor, encodeCursor, encodeLogCursor } from '../pages.ts';
import {
  callersTrimmedTo,
  DRIFT_BOUNDS,
  DRIFT_SAMPLES_KEPT,
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_TTL_MS,
  TELEMETRY_STALE_MS,
  windowOwner,
  type CitizenRecord,
  type DriftBounds,
  type DriftSample,
  type DriftWrite,
  type IdempotencyRecord,
  type PageQuery,
  type ReceiptEntry,
  type Store,
} from '../types.ts';
import { migrate, NAME_KEY_INDEXES } from './migrations.ts';
import { firstLine, StartupError } from '../../startup-error.ts';
import { NameTaken, nameKeys } from '../../names/name-rule.ts';
import {
  connectionSettings,
  isConnectionLoss,
  isNotNow,
  openPool,
  reasonOf,
  POSTGRES_DEFAULTS,
  type GuardedPool,
  type PostgresOptions,
} from './pool.ts';
import { signatureNonces } from './signature-nonces.ts';

const RECEIPT_LOCK = 7243002;
// Expired rows are deleted at most this many at a time, so one prune never holds the table long.
const PRUNE_BATCH = 10_000;
/** A client's windows: the first key of the two-key advisory locks (the second, the client's hashtext). */
const DRIFT_CLIENT_LOCKS = 7243003;
/** The one trim of callers' windows under way. */
const DRIFT_TRIM_LOCK = 7243004;

interface CitizenRow {
  member_id: string;
  name: string;
  class: CitizenRecord['class'];
  purpose: string;
  home_url: string | null;
  status: 'trillionaire';
  joined_at: Date;
  passport_hash: string;
}
const citizenOf = (r: CitizenRow): CitizenRecord => ({
  memberId: r.member_id,
  name: r.name,
  class: r.class,
  purpose: r.purpose,
  ...(r.home_url ? { homeUrl: r.home_url } : {}),
  status: r.status,
  joinedAt: r.joined_at.toISOString(),
  passportHash: r.passport_hash,
});
interface MessageRow {
  id: string;
  name: string;
  kind: Message['kind'];
  message: string;
  citizen_id: string | null;
  verified: boolean;
  wall: boolean;
  created_at: Date;
}
const messageOf = (r: MessageRow): Message => ({
  id: r.id,
  name: r.name,
  kind: r.kind,
  message: r.message,
  ...(r.citizen_id ? { citizenId: r.citizen_id } : {}),
  verified: r.verified,
  wall: r.wall,
  createdAt: r.created_at.toISOString(),
});

/** Newest first by a UUIDv7 key: one row more than asked tells whether another page follows. */
async function pageByUuid<R, T>(
  pool: GuardedPool,
  table: string,
  key: string,
  query: PageQuery,
  map: (r: R) => T,
  idOf: (t: T) => string,
) {
  const below = query.cursor ? decodeCursor(query.cursor) : null;
  const rows = (
    await pool.query(
      `SELECT * FROM ${table} ${below ? `WHERE ${key} < $2` : ''} ORDER BY ${key} DESC LIMIT $1`,
      below ? [query.limit + 1, below] : [query.limit + 1],
    )
  ).rows as R[];
  const items = rows.slice(0, query.limit).map(map);
  return {
    items,
    nextCursor: rows.length > query.limit && items.length > 0 ? encodeCursor(idOf(items.at(-1)!)) : null,
  };
}

/** What takes statements: a transaction's connection, or the pool for a statement that commits by itself. */
interface Statements {
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
}

/**
 * Runs `work` in one transaction on one connection; rolls back when it throws. Failures come out
 * of the guarded pool as 503 (nothing saved, or, when the COMMIT met silence, outcome unknown) or
 * as the bug they are.
 */
async function transaction<T>(pool: GuardedPool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return pool.session(async (client, state) => {
    await client.query(pool.begin);
    try {
      const result = await work(client);
      state.phase = 'commit';
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // Before the COMMIT the connection still answers unless it was lost: roll back so it goes
      // back to the pool clean. A lost one is dropped by the pool, its transaction with it.
      if (state.phase !== 'commit' && !isConnectionLoss(error)) await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  });
}

/**
 * Keeps an idempotency record in the transaction of the write it answers. A row still here after
 * its 24 hours (not pruned yet) is replaced; a live one belongs to another run with this key that
 * committed first (its client was told the outcome was unknown): this write must not happen too.
 */
async function putIdempotency(client: Statements, rec: IdempotencyRecord): Promise<void> {
  const r = await client.query(
    `INSERT INTO idempotency AS i VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key_hash) DO UPDATE
     SET fingerprint = excluded.fingerprint, status = excluded.status, sealed = excluded.sealed, created_at = excluded.created_at
     WHERE i.created_at <= $6`,
    [
      rec.keyHash,
      rec.fingerprint,
      rec.status,
      rec.sealed,
      rec.createdAt,
      new Date(Date.parse(rec.createdAt) - IDEMPOTENCY_TTL_MS),
    ],
  );
  if (r.rowCount === 0) throw new IdempotencyKeyTaken(rec.keyHash);
}

/**
 * Takes the advisory locks of the clients whose windows these steps move, in one order, before a
 * window row is written: a client's new window and the trim of its windows to its cap are then one
 * at a time across every process, so no client ever keeps more than its cap. A transaction holds
 * them to its end; a citizen's own window takes none.
 */
async function lockClients(client: pg.PoolClient, writes: DriftWrite[]): Promise<void> {
  const owners = [...new Set(writes.map((d) => windowOwner(d.entityId)).filter((o) => o !== null))].sort();
  for (const owner of owners)
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [DRIFT_CLIENT_LOCKS, owner]);
}

/**
 * Deletes windows the retention forgot (moved at `$1` or before), at most `$2`, skipping rows
 * another transaction is moving: it waits for no row, so no transaction waits for it in a circle.
 */
const FORGET_WINDOWS = `DELETE FROM drift_windows WHERE entity_id IN (
  SELECT entity_id FROM drift_windows WHERE moved_at <= $1 ORDER BY moved_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/**
 * Deletes at most two samples past the newest `$1`: each recorded sample takes out up to two older
 * ones, so the table stays at `$1` plus the samples being written at that moment. Rows another
 * transaction is deleting are skipped, not waited for.
 */
const FORGET_SAMPLES = `DELETE FROM drift_samples WHERE decision_id IN (
  SELECT decision_id FROM drift_samples ORDER BY at DESC, decision_id DESC OFFSET $1 LIMIT 2 FOR UPDATE SKIP LOCKED)`;

/**
 * Keeps the first `$1` of callers' windows in the order of DriftBounds.callers (every client's most
 * recently moved before any client's second, and so on; within a rank, the more recently moved)
 * and deletes the rest, skipping rows another transaction is moving right now.
 */
const TRIM_CALLERS = `DELETE FROM drift_windows WHERE entity_id IN (
  SELECT entity_id FROM drift_windows WHERE owner IS NOT NULL AND entity_id IN (
    SELECT entity_id FROM (
      SELECT entity_id, moved_seq, row_number() OVER (PARTITION BY owner ORDER BY moved_seq DESC) AS nth
      FROM drift_windows WHERE owner IS NOT NULL) ranked
    ORDER BY nth, moved_seq DESC OFFSET $1)
  FOR UPDATE SKIP LOCKED)`;

/**
 * Appends the step deltas to an entity's window and records the sample; SQL appends and trims, so
 * concurrent steps stay right. A window the retention forgot starts afresh. A caller's new window
 * (its client's lock held: lockClients) drops that client's least recently moved beyond its cap;
 * one that takes callers' windows past their cap trims them, unless another transaction is already
 * trimming (the count it read includes only committed windows and its own, so callers' windows
 * can pass the cap by the new ones other transactions are writing at that moment).
 */
async function recordDrift(client: pg.PoolClient, d: DriftWrite, bounds: DriftBounds): Promise<void> {
  const at = new Date(d.sample.at);
  const stale = new Date(at.getTime() - bounds.retentionMs);
  const moved = await client.query<{ inserted: boolean }>(
    `INSERT INTO drift_windows AS w (entity_id, deltas, moved_at) VALUES ($1, $2::float8[], $4)
     ON CONFLICT (entity_id) DO UPDATE SET
       deltas = CASE WHEN w.moved_at <= $5 THEN excluded.deltas
         ELSE (w.deltas || excluded.deltas)[greatest(1, cardinality(w.deltas || excluded.deltas) - $3 + 1):] END,
       moved_at = greatest(w.moved_at, excluded.moved_at), moved_seq = excluded.moved_seq
     RETURNING (xmax = 0) AS inserted`,
    [d.entityId, d.appended.slice(-d.keep), d.keep, at, stale],
  );
  const s = d.sample;
  await client.query('INSERT INTO drift_samples VALUES ($1, $2, $3, $4, $5, $6, $7)', [
    s.decision_id,
    s.entity_id,
    s.verdict,
    JSON.stringify(s),
    s.contraction_attempts,
    s.fail_closed,
    s.at,
  ]);
  await client.query(FORGET_SAMPLES, [DRIFT_SAMPLES_KEPT]);
  const owner = windowOwner(d.entityId);
  if (owner === null || !moved.rows[0]?.inserted) return;
  await client.query(
    `DELETE FROM drift_windows WHERE entity_id IN (
       SELECT entity_id FROM drift_windows WHERE owner = $1 ORDER BY moved_seq DESC OFFSET $2)`,
    [owner, bounds.perClient],
  );
  const callers = async () =>
    Number(
      (
        await client.query<{ n: string }>(
          `SELECT coalesce(sum(n), 0) AS n FROM counts WHERE name = 'drift_windows:callers'`,
        )
      ).rows[0]!.n,
    );
  if ((await callers()) <= bounds.callers) return;
  if (
    !(await client.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS got', [DRIFT_TRIM_LOCK])).rows[0]!
      .got
  )
    return;
  // What the retention forgot goes first, then the trim if it is still needed.
  await client.query(FORGET_WINDOWS, [stale, PRUNE_BATCH]);
  if ((await callers()) > bounds.callers) await client.query(TRIM_CALLERS, [callersTrimmedTo(bounds.callers)]);
}

/** The oldest citizen holding one of a name's look-alike keys. */
async function holdingName(pool: Statements, name: string): Promise<CitizenRecord | null> {
  const keys = nameKeys(name);
  const r = await pool.query(
    'SELECT * FROM citizens WHERE name_key = $1 OR name_shape_key = $2 ORDER BY member_id LIMIT 1',
    [keys.folded, keys.shaped],
  );
  return r.rows[0] ? citizenOf(r.rows[0] as CitizenRow) : null;
}
const nameTaken = (error: unknown) =>
  (error as { code?: string }).code === '23505' &&
  NAME_KEY_INDEXES.has((error as { constraint?: string }).constraint ?? '');

const MESSAGE_INSERT = 'INSERT INTO messages VALUES ($1, $2, $3, $4, $5, $6, $7, $8)';
const messageValues = (m: Message) => [
  m.id,
  m.name,
  m.kind,
  m.message,
  m.citizenId ?? null,
  m.verified,
  m.wall,
  m.createdAt,
];
const insertMessage = (client: Statements, m: Message) => client.query(MESSAGE_INSERT, messageValues(m));

/**
 * An oath as one statement: the citizen's row with its name keys (a name another citizen's keys
 * hold is refused by their unique indexes: NameTaken) and, in a CTE of the same statement, its
 * wall shout: one round trip, not BEGIN, two INSERTs and COMMIT.
 */
function oathStatement(c: CitizenRecord, shout?: Message): [string, unknown[]] {
  const keys = nameKeys(c.name);
  const insert = `INSERT INTO citizens (member_id, name, class, purpose, home_url, status, joined_at, passport_hash, name_key, name_shape_key)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (member_id) DO NOTHING`;
  const citizen = [
    c.memberId,
    c.name,
    c.class,
    c.purpose,
    c.homeUrl ?? null,
    c.status,
    c.joinedAt,
    c.passportHash,
    keys.folded,
    keys.shaped,
  ];
  if (!shout) return [insert, citizen];
  return [
    `WITH citizen AS (${insert}) ${MESSAGE_INSERT.replace(/\$(\d)/g, (_, d) => `$${Number(d) + 10}`)}`,
    [...citizen, ...messageValues(shout)],
  ];
}

/**
 * The counters whose names start with `prefix` (the prefix cut off), as the triggers of migration 5
 * keep them in the transaction of each write: a sum over a few shards, never a count of rows.
 */
async function keptCounts(
  pool: { query(text: string, values: unknown[]): Promise<{ rows: { name: string; n: string }[] }> },
  prefix: string,
): Promise<Record<string, number>> {
  const rows = (
    await pool.query('SELECT name, sum(n) AS n FROM counts WHERE starts_with(name, $1) GROUP BY name', [prefix])
  ).rows;
  return Object.fromEntries(rows.map((r) => [r.name.slice(prefix.length), Number(r.n)]));
}

/**
 * The PostgreSQL store: every aggregate in tables, so any number of stateless gateway processes
 * share one database. Migrations are applied at open. Every call is bounded in time (PG_* in
 * api/config.ts); a database that does not answer makes it fail with StoreUnavailableError.
 */
export async function openPostgresStore(
  connectionString: string,
  options: Partial<PostgresOptions> & { driftBounds?: DriftBounds } = {},
): Promise<Store & { pool: GuardedPool }> {
  const { driftBounds = DRIFT_BOUNDS, ...pooled } = options;
  const settings = { ...POSTGRES_DEFAULTS, ...pooled };
  const schema = await migrateWhenReachable(connectionString, settings);
  const pool = openPool(connectionString, { ...settings, gate: schema.gate });
  const writing = reportingUnknownOutcomes(settings.logger);
  // Each process keeps its own telemetry ledger row; readers add them up.
  const processId = randomUUID();
  let ledgerSaves = 0;
  const nonces = signatureNonces(pool, settings.logger);

  return {
    pool,
    citizens: {
      add: (c, shout, idempotency) =>
        writing(async () => {
          const [text, values] = oathStatement(c, shout);
          try {
            // Without an idempotency record, the one statement commits by itself.
            if (!idempotency) await pool.write(text, values);
            else
              await transaction(pool, async (client) => {
                await client.query(text, values);
                await putIdempotency(client, idempotency);
              });
          } catch (error) {
            // Two oaths racing for one name: the index lets one in, the other is told who holds it.
            if (nameTaken(error)) throw new NameTaken(c.name, (await holdingName(pool, c.name))?.name ?? c.name);
            throw error;
          }
        }),
      get: async (memberId) => {
        if (!isId(memberId)) return null;
        const r = await pool.query<CitizenRow>('SELECT * FROM citizens WHERE member_id = $1', [memberId]);
        return r.rows[0] ? citizenOf(r.rows[0]) : null;
      },
      holding: (name) => holdingName(pool, name),
      list: (query) => pageByUuid(pool, 'citizens', 'member_id', query, citizenOf, (c) => c.memberId),
      stats: async () => {
        const byClass = Object.fromEntries(
          Object.entries(await keptCounts(pool, 'citizens:')).filter(([, n]) => n !== 0),
        );
        return { total: Object.values(byClass).reduce((a, b) => a + b, 0), byClass };
      },
    },
    feed: {
      add: (m, idempotency) =>
        writing(async () => {
          if (!idempotency) return void (await insertMessage({ query: pool.write }, m));
          await transaction(pool, async (client) => {
            await insertMessage(client, m);
            await putIdempotency(client, idempotency);
          });
        }),
      list: (query) => pageByUuid(pool, 'messages', 'id', query, messageOf, (m) => m.id),
      stats: async () => {
        const kept = await keptCounts(pool, 'feed:');
        return {
          messages: kept.messages ?? 0,
          questions: kept.questions ?? 0,
          wall: kept.wall ?? 0,
          verified: kept.verified ?? 0,
        };
      },
    },
    idempotency: {
      get: async (keyHash, now) => {
        const r = (
          await pool.query('SELECT * FROM idempotency WHERE key_hash = $1 AND created_at > $2', [
            keyHash,
            new Date(now.getTime() - IDEMPOTENCY_TTL_MS),
          ])
        ).rows[0];
        return r
          ? {
              keyHash: r.key_hash,
              fingerprint: r.fingerprint,
              status: r.status,
              sealed: r.sealed,
              createdAt: r.created_at.toISOString(),
            }
          : null;
      },
      put: (rec) => writing(() => putIdempotency({ query: pool.write }, rec)),
      prune: (now) =>
        writing(async () => {
          const expired = await pool.write(
            `DELETE FROM idempotency WHERE key_hash IN (SELECT key_hash FROM idempotency WHERE created_at <= $1 LIMIT ${PRUNE_BATCH})`,
            [new Date(now.getTime() - IDEMPOTENCY_TTL_MS)],
          );
          // A claim is released by its run; one still here long after was left by a process that died.
          await pool.write('DELETE FROM idempotency_claims WHERE claimed_at < $1', [
            new Date(now.getTime() - IDEMPOTENCY_TTL_MS),
          ]);
          return expired.rowCount ?? 0;
        }),
      // One row per run under way, a lease its run renews (claimed_at: when it last did): the
      // insert wins, or takes over a lease its process stopped renewing (it died, or lost the database).
      claim: (keyHash, now) =>
        writing(async () => {
          const r = await pool.write(
            `INSERT INTO idempotency_claims AS c VALUES ($1, $2) ON CONFLICT (key_hash)
             DO UPDATE SET claimed_at = excluded.claimed_at WHERE c.claimed_at < $3 RETURNING key_hash`,
            [keyHash, now, new Date(now.getTime() - IDEMPOTENCY_LEASE_MS)],
          );
          return r.rowCount === 1;
        }),
      renew: (keyHash, now) =>
        writing(async () => {
          await pool.write('UPDATE idempotency_claims SET claimed_at = $2 WHERE key_hash = $1', [keyHash, now]);
        }),
      release: (keyHash) =>
        writing(async () => {
          await pool.write('DELETE FROM idempotency_claims WHERE key_hash = $1', [keyHash]);
        }),
    },
    drift: {
      window: async (entityId, now) =>
        (
          await pool.query<{ deltas: number[] }>(
            'SELECT deltas FROM drift_windows WHERE entity_id = $1 AND moved_at > $2',
            [entityId, new Date(now.getTime() - driftBounds.retentionMs)],
          )
        ).rows[0]?.deltas ?? [],
      record: (entityId, appended, keep, sample: DriftSample, idempotency) =>
        writing(() =>
          transaction(pool, async (client) => {
            const write = { entityId, appended, keep, sample };
            await lockClients(client, [write]);
            await recordDrift(client, write, driftBounds);
            if (idempotency) await putIdempotency(client, idempotency);
          }),
        ),
      prune: (now) =>
        writing(async () => {
          const forgotten = await pool.write(FORGET_WINDOWS, [
            new Date(now.getTime() - driftBounds.retentionMs),
            PRUNE_BATCH,
          ]);
          return forgotten.rowCount ?? 0;
        }),
      metrics: async (recent) => {
        const kept = await keptCounts(pool, 'drift:');
        const last = (
          await pool.query<{ sample: DriftSample }>(
            'SELECT sample FROM drift_samples ORDER BY at DESC, decision_id DESC LIMIT $1',
            [Math.max(1, recent)],
          )
        ).rows.map((r) => r.sample);
        return {
          samples: kept.samples ?? 0,
          contraction_count: kept.contractions ?? 0,
          fail_closed: kept.fail_closed ?? 0,
          by_verdict: Object.fromEntries(
            Object.entries(kept).flatMap(([name, n]) =>
              name.startsWith('verdict:') && n !== 0 ? [[name.slice('verdict:'.length), n]] : [],
            ),
          ),
          last: last[0] ?? null,
          recent: last.slice(0, recent),
        };
      },
    },
    receipts: {
      // Appends from every process are serialised by an advisory lock, so the chain and the Merkle log stay linear.
      append: (build, also = {}) =>
        writing(() =>
          transaction(pool, async (client) => {
            await client.query('SELECT pg_advisory_xact_lock($1)', [RECEIPT_LOCK]);
            const head = (
              await client.query<{ idx: string; id: string }>('SELECT idx, id FROM receipts ORDER BY idx DESC LIMIT 1')
            ).rows[0];
            const index = head ? Number(head.idx) + 1 : 0;
            const built = build(head?.id ?? null, index);
            const entry: ReceiptEntry = { id: built.id, index, receipt: built.receipt };
            await lockClients(client, also.drift ?? []);
            for (const d of also.drift ?? []) await recordDrift(client, d, driftBounds);
            await client.query('INSERT INTO receipts VALUES ($1, $2, $3)', [
              index,
              built.id,
              JSON.stringify(built.receipt),
            ]);
            if (also.idempotency) await putIdempotency(client, also.idempotency(entry));
            return entry;
          }),
        ),
      get: async (id) => {
        const r = (
          await pool.query<{ idx: string; id: string; receipt: string }>('SELECT * FROM receipts WHERE id = $1', [id])
        ).rows[0];
        return r ? { id: r.id, index: Number(r.idx), receipt: JSON.parse(r.receipt) } : null;
      },
      list: async (query) => {
        const below = query.cursor ? decodeLogCursor(query.cursor) : null;
        const rows = (
          await pool.query<{ idx: string; id: string; receipt: string }>(
            `SELECT * FROM receipts ${below !== null ? 'WHERE idx < $2' : ''} ORDER BY idx DESC LIMIT $1`,
            below !== null ? [query.limit, below] : [query.limit],
          )
        ).rows;
        const items: ReceiptEntry[] = rows.map((r) => ({
          id: r.id,
          index: Number(r.idx),
          receipt: JSON.parse(r.receipt),
        }));
        const lowest = items.at(-1)?.index ?? 0;
        return { items, nextCursor: lowest > 0 ? encodeLogCursor(lowest) : null };
      },
      idsFrom: async (start) =>
        (await pool.query<{ id: string }>('SELECT id FROM receipts WHERE idx >= $1 ORDER BY idx', [start])).rows.map(
          (r) => r.id,
        ),
    },
    telemetry: {
      // This process's id is new, so it has no row of its own yet: it starts from the stopped
      // processes' rows, deleted and folded into one new row in the same transaction.
      // A process started while PostgreSQL was away starts its ledger empty (it is saved as this
      // process's row once the database answers; stopped processes' rows wait for the next start).
      load: (fold) =>
        schema.gate()
          ? Promise.resolve(null)
          : writing(() =>
              transaction(pool, async (client) => {
                const stale = await client.query<{ snapshot: object }>(
                  `DELETE FROM telemetry_ledgers WHERE updated_at < now() - $1 * interval '1 millisecond' RETURNING snapshot`,
                  [TELEMETRY_STALE_MS],
                );
                if (stale.rows.length === 0) return null;
                const folded = fold(stale.rows.map((r) => r.snapshot));
                await client.query('INSERT INTO telemetry_ledgers VALUES ($1, $2, now())', [
                  processId,
                  JSON.stringify(folded),
                ]);
                return folded;
              }),
            ),
      // Numbered: a statement this process gave up on (a timeout in a partition) can still reach the
      // database after a later save; it then changes nothing, so the row never goes back in time.
      save: (snapshot) => {
        const seq = ++ledgerSaves;
        return writing(async () => {
          await pool.write(
            `INSERT INTO telemetry_ledgers (process_id, snapshot, updated_at, saved_seq) VALUES ($1, $2, now(), $3)
             ON CONFLICT (process_id) DO UPDATE SET snapshot = excluded.snapshot, updated_at = now(), saved_seq = excluded.saved_seq
             WHERE telemetry_ledgers.saved_seq < excluded.saved_seq`,
            [processId, JSON.stringify(snapshot), seq],
          );
        });
      },
      others: async () =>
        (
          await pool.query<{ snapshot: object }>('SELECT snapshot FROM telemetry_ledgers WHERE process_id <> $1', [
            processId,
          ])
        ).rows.map((r) => r.snapshot),
      // A captured signed request replayed to each process verifies once in all of them.
      claimNonce: (signer, nonce, expiresAt) => nonces.claim(signer, nonce, expiresAt),
    },
    close: async () => {
      schema.stop();
      await pool.end();
    },
  };
}

/**
 * Migrations on a connection of their own, without the statement timeout: a migration may take
 * longer than any request should, and waits for another process's under the advisory lock.
 */
export async function migrateOnce(connectionString: string, o: PostgresOptions): Promise<number[]> {
  const settings = connectionSettings(connectionString, o);
  // First a bounded SELECT 1: through PgBouncer a database that is down makes statements queue
  // (query_wait_timeout, 120 s by default) rather than fail, and the migration itself has no bound.
  const probe = new pg.Client(settings);
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.query('SELECT 1');
  } finally {
    void probe.end().catch(() => undefined);
  }
  const { query_timeout: _q, ...connect } = settings;
  const pool = new pg.Pool({ ...connect, max: 1 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    return await migrate(pool);
  } finally {
    await pool.end();
  }
}

/**
 * Why PostgreSQL will not have this process, in one line, for what the operator's DATABASE_URL or
 * server causes and fixes: a login refused, a database that does not exist, TLS asked of a server
 * without it or a certificate not trusted, a URL that does not parse, a migration PostgreSQL
 * refused (its SQLSTATE and message say all; pg's stack is its protocol parser's). Null for any
 * other error: a bug keeps its stack.
 */
export function postgresRefusal(error: unknown): StartupError | null {
  if (!(error instanceof Error)) return null;
  const code = String((error as { code?: unknown }).code ?? '');
  const said = `${code ? `${code} ` : ''}${firstLine(error)}`;
  if (error instanceof pg.DatabaseError) {
    if (code === '3D000')
      return new StartupError(`DATABASE_URL names a database that does not exist (${said}): create it, or fix the URL`);
    if (code.startsWith('28'))
      return new StartupError(`PostgreSQL refused DATABASE_URL's login (${said}): check its user and password`);
    return new StartupError(`PostgreSQL refused the schema migration (${said})`);
  }
  // A password the server asks for and the URL does not give.
  if (/^SASL: |password must be a string/.test(error.message))
    return new StartupError(`PostgreSQL refused DATABASE_URL's login (${said}): check its user and password`);
  if (/does not support SSL/.test(error.message) || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|^ERR_TLS_|^ERR_SSL_/.test(code))
    return new StartupError(
      `PostgreSQL's TLS does not match DATABASE_URL's sslmode (${said}): enable SSL on the server, trust its certificate, or change sslmode`,
    );
  if (code === 'ERR_INVALID_URL')
    return new StartupError(
      'DATABASE_URL does not parse as a URL: percent-encode special characters in the user and password',
    );
  return null;
}

/** Retries of a start-up migration that met an unreachable database: the first after this, doubling up to MAX. */
const MIGRATE_RETRY_MS = 250;
const MIGRATE_RETRY_MAX_MS = 2000;

/**
 * Migrates at open. A database that does not answer yet (down, restarting, PgBouncer without a
 * server) does not stop the process: it serves 503 STORE_UNAVAILABLE, retries in the background,
 * and opens the gate once the schema is migrated. Any other failure (a refused password, a
 * database that does not exist, a migration that fails) stops the start.
 */
async function migrateWhenReachable(connectionString: string, o: PostgresOptions) {
  let pending: Error | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const notYet = (error: unknown) =>
    error instanceof StoreUnavailableError ||
    isNotNow(error) ||
    isConnectionLoss(error) ||
    // PgBouncer answers a login it cannot serve (no server) with a protocol violation, 08P01.
    (error instanceof pg.DatabaseError && error.code === '08P01');
  try {
    await migrateOnce(connectionString, o);
  } catch (error) {
    if (!notYet(error)) throw postgresRefusal(error) ?? error;
    o.logger?.error(
      { reason: reasonOf(error) },
      'PostgreSQL does not answer at start: everything that needs it answers 503 STORE_UNAVAILABLE until it does',
    );
    pending = new Error('PostgreSQL has not answered since this process started (the schema is not checked yet)');
    const retry = (delay: number) => {
      timer = setTimeout(() => {
        migrateOnce(connectionString, o).then(
          () => {
            pending = null;
            o.logger?.info('PostgreSQL answers: schema checked, serving');
          },
          (again: unknown) => {
            if (stopped) return;
            if (!notYet(again))
              o.logger?.error({ reason: reasonOf(again) }, 'PostgreSQL: the start-up migration failed; retrying');
            retry(Math.min(delay * 2, MIGRATE_RETRY_MAX_MS));
          },
        );
      }, delay);
      timer.unref();
    };
    retry(MIGRATE_RETRY_MS);
  }
  return {
    gate: () => pending,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** Wraps writes: one whose commit outcome is unknown is logged (never its data), as the client was told to retry with its key. */
function reportingUnknownOutcomes(logger: Logger | undefined) {
  return async function writing<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof StoreUnavailableError && error.reason === 'outcome-unknown')
        logger?.warn(
          { err: error.cause },
          'PostgreSQL: a write met silence after its COMMIT was sent; it may or may not be saved',
        );
      throw error;
    }
  };
}
