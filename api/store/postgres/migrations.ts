import type pg from 'pg';
import { nameKeys } from '../../names/name-rule.ts';

/** Versioned schema changes, applied in order at start and by `npm run migrate`. Never edit a released one. */
export const MIGRATIONS: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'citizens, feed, idempotency, drift, receipts, telemetry, rate limits',
    sql: `
      CREATE TABLE citizens (
        member_id uuid PRIMARY KEY, name text NOT NULL, class text NOT NULL, purpose text NOT NULL,
        home_url text, status text NOT NULL, joined_at timestamptz NOT NULL, passport_hash text NOT NULL);
      CREATE INDEX citizens_class ON citizens (class);
      CREATE TABLE messages (
        id uuid PRIMARY KEY, name text NOT NULL, kind text NOT NULL, message text NOT NULL, citizen_id uuid,
        verified boolean NOT NULL, wall boolean NOT NULL, created_at timestamptz NOT NULL);
      CREATE TABLE idempotency (
        key_hash text PRIMARY KEY, fingerprint text NOT NULL, status integer NOT NULL, sealed text NOT NULL, created_at timestamptz NOT NULL);
      CREATE TABLE drift_windows (entity_id text PRIMARY KEY, deltas double precision[] NOT NULL);
      CREATE TABLE drift_samples (
        decision_id uuid PRIMARY KEY, entity_id text NOT NULL, verdict text NOT NULL, sample jsonb NOT NULL,
        contraction_attempts integer NOT NULL, fail_closed boolean NOT NULL, at timestamptz NOT NULL);
      CREATE INDEX drift_samples_at ON drift_samples (at DESC);
      CREATE TABLE receipts (idx bigint PRIMARY KEY, id text UNIQUE NOT NULL, receipt text NOT NULL);
      CREATE TABLE telemetry_ledgers (process_id text PRIMARY KEY, snapshot jsonb NOT NULL, updated_at timestamptz NOT NULL);
      CREATE TABLE rate_limits (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint);
    `,
  },
  {
    version: 2,
    name: 'idempotency claims shared by processes',
    sql: `CREATE TABLE idempotency_claims (key_hash text PRIMARY KEY, claimed_at timestamptz NOT NULL);`,
  },
  {
    version: 3,
    name: 'idempotency records: no answer kept for routes that change nothing; pruned by age',
    sql: `
      ALTER TABLE idempotency ALTER COLUMN sealed DROP NOT NULL;
      CREATE INDEX idempotency_created_at ON idempotency (created_at);
    `,
  },
  {
    version: 4,
    name: 'citizens: look-alike name keys, each unique (existing rows are keyed by backfillNameKeys)',
    sql: `
      ALTER TABLE citizens ADD COLUMN name_key text, ADD COLUMN name_shape_key text;
      CREATE UNIQUE INDEX citizens_name_key ON citizens (name_key);
      CREATE UNIQUE INDEX citizens_name_shape_key ON citizens (name_shape_key);
    `,
  },
  {
    version: 5,
    name: 'kept counts: citizens by class, feed messages, drift samples, kept by triggers in the writing transaction; store moves',
    sql: keptCountsSql(),
  },
  {
    version: 6,
    name: 'Web Bot Auth nonces claimed once across processes, each until its signature expires',
    sql: `
      CREATE TABLE signature_nonces (
        signer text NOT NULL, nonce_hash text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (signer, nonce_hash));
      CREATE INDEX signature_nonces_expires_at ON signature_nonces (expires_at);
    `,
  },
  {
    version: 7,
    name: 'telemetry ledger saves numbered: a save a process gave up on, run late, never overwrites a later one',
    sql: `ALTER TABLE telemetry_ledgers ADD COLUMN saved_seq bigint NOT NULL DEFAULT 0;`,
  },
  {
    version: 8,
    name: 'drift windows bounded: when each last moved (forgotten after the retention), whose it is, callers counted by triggers',
    sql: driftWindowBoundsSql(),
  },
  {
    version: 9,
    name: 'drift samples bounded: the totals count every sample recorded, the table keeps the newest (deleting one no longer uncounts it)',
    // 100: DRIFT_SAMPLES_KEPT when it was written, spelled out so that the migration never changes.
    sql: `
      DROP TRIGGER drift_samples_counted_delete ON drift_samples;
      DELETE FROM drift_samples WHERE decision_id NOT IN (
        SELECT decision_id FROM drift_samples ORDER BY at DESC, decision_id DESC LIMIT 100);
    `,
  },
];

/**
 * Migration 8. Each window gets the time it last moved (windows kept before count as moved now), its
 * place among all moves (a sequence: the least recently moved of a client is the lowest), and the
 * client whose window it is: the text after the last ` @` of a caller's key (`<entity_id> @<client>`,
 * entity ids hold no space), null for a citizen's own. Callers' windows are counted in `counts`
 * (`drift_windows:callers`) by statement-level triggers, sharded as migration 5's.
 */
function driftWindowBoundsSql(): string {
  const callers = (rows: string) =>
    `SELECT 'drift_windows:callers' AS name, count(*) AS n FROM ${rows} WHERE owner IS NOT NULL HAVING count(*) > 0`;
  const add = (
    select: string,
  ) => `INSERT INTO counts AS k (name, shard, n) SELECT name, pg_backend_pid() % 64, n FROM (${select}) d
      ON CONFLICT (name, shard) DO UPDATE SET n = k.n + excluded.n;`;
  return `
    CREATE SEQUENCE drift_window_moves;
    ALTER TABLE drift_windows
      ADD COLUMN moved_at timestamptz NOT NULL DEFAULT now(),
      ADD COLUMN moved_seq bigint NOT NULL DEFAULT nextval('drift_window_moves'),
      ADD COLUMN owner text GENERATED ALWAYS AS (substring(entity_id from '^.* @(.*)$')) STORED;
    CREATE INDEX drift_windows_moved_at ON drift_windows (moved_at);
    CREATE INDEX drift_windows_owner ON drift_windows (owner, moved_seq) WHERE owner IS NOT NULL;
    CREATE FUNCTION count_drift_windows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN ${add(callers('new_rows'))}
      ELSIF TG_OP = 'DELETE' THEN ${add(`SELECT name, -n AS n FROM (${callers('old_rows')}) o`)}
      ELSE DELETE FROM counts WHERE name = 'drift_windows:callers';
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER drift_windows_counted_insert AFTER INSERT ON drift_windows REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_drift_windows();
    CREATE TRIGGER drift_windows_counted_delete AFTER DELETE ON drift_windows REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_drift_windows();
    CREATE TRIGGER drift_windows_counted_truncate AFTER TRUNCATE ON drift_windows FOR EACH STATEMENT EXECUTE FUNCTION count_drift_windows();
    INSERT INTO counts (name, shard, n) SELECT name, 0, n FROM (${callers('drift_windows')}) d;`;
}

/** The unique indexes that keep names from looking alike: a write refused by one is NAME_TAKEN. */
export const NAME_KEY_INDEXES = new Set(['citizens_name_key', 'citizens_name_shape_key']);

// A key no name can have (names hold no control character), unique to its row: what a citizen
// gets whose name already looked like an older citizen's when keys came in. It keeps its name;
// the older one holds the key, so no new citizen or anonymous message can take it.
const shadowKey = (memberId: string) => `\u0001shadowed:${memberId}`;
const BACKFILL_BATCH = 1000;

/**
 * Keys the citizens that have none (stored before migration 4, or by a process of an older
 * version since), oldest first, a batch per transaction. Of citizens whose names already looked
 * alike, the oldest holds each key and the others get a shadow key: they keep their names.
 * A batch that races a new oath for a key is rolled back and read again. How many rows were keyed.
 */
export async function backfillNameKeys(client: pg.PoolClient): Promise<number> {
  let keyed = 0;
  // Batches walk the primary key from where the last one ended: a scan from the start for each
  // batch made keying a moved store quadratic (370,000 rows: 49 s).
  let after = '00000000-0000-0000-0000-000000000000';
  // Fresh statistics first: rows just copied in (a move) are unknown to the planner, which then
  // reads both key indexes whole for each batch instead of walking the primary key.
  await client.query('ANALYZE citizens');
  for (let raced = 0; ;) {
    // Each batch a transaction of its own under the migrations' lock: one process keys the rows,
    // the others find nothing left to key.
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const rows = (
        await client.query<{ member_id: string; name: string }>(
          `SELECT member_id, name FROM citizens WHERE member_id > $1 AND (name_key IS NULL OR name_shape_key IS NULL) ORDER BY member_id LIMIT ${BACKFILL_BATCH}`,
          [after],
        )
      ).rows;
      if (rows.length === 0) {
        await client.query('COMMIT');
        return keyed;
      }
      const keys = rows.map((r) => nameKeys(r.name));
      const held = (
        await client.query<{ name_key: string | null; name_shape_key: string | null }>(
          'SELECT name_key, name_shape_key FROM citizens WHERE name_key = ANY($1) OR name_shape_key = ANY($2)',
          [keys.map((k) => k.folded), keys.map((k) => k.shaped)],
        )
      ).rows;
      const folded = new Set(held.map((r) => r.name_key));
      const shaped = new Set(held.map((r) => r.name_shape_key));
      const take = (taken: Set<string | null>, key: string, memberId: string) =>
        taken.has(key) ? shadowKey(memberId) : (taken.add(key), key);
      const values = rows.map((r, i) => [
        r.member_id,
        take(folded, keys[i]!.folded, r.member_id),
        take(shaped, keys[i]!.shaped, r.member_id),
      ]);
      await client.query(
        'UPDATE citizens c SET name_key = v.k, name_shape_key = v.s FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, k, s) WHERE c.member_id = v.id',
        [values.map((v) => v[0]), values.map((v) => v[1]), values.map((v) => v[2])],
      );
      await client.query('COMMIT');
      keyed += rows.length;
      after = rows[rows.length - 1]!.member_id;
    } catch (error) {
      await client.query('ROLLBACK');
      // A new oath took one of these keys between the read and the update: read the batch again.
      if ((error as { code?: string }).code !== '23505' || ++raced > 10) throw error;
    }
  }
}

/**
 * Migration 5, frozen as released. Each counted table gets statement-level triggers (one per
 * event: PostgreSQL allows transition tables on single-event triggers only) that add what a
 * statement inserted and subtract what it deleted into `counts`, in the statement's own
 * transaction, whoever writes. A counter is spread over shards (the backend's pid modulo 64), so
 * concurrent transactions on other connections never wait for one another's counter row.
 * The triggers exist before the backfill, and hold off writers until this commits: the backfill
 * counts what was there, the triggers everything after.
 */
function keptCountsSql(): string {
  // What rows of each table add to which counter: (name, n) rows, none with n = 0. A statement of
  // the service inserts one row, so these are written for one row to cost little (a grouping and
  // an upsert, 30 µs) and stay right for many.
  const tables: [table: string, prefix: string, select: (rows: string) => string][] = [
    [
      'citizens',
      'citizens:',
      (rows) => `SELECT 'citizens:' || class AS name, count(*) AS n FROM ${rows} GROUP BY class`,
    ],
    [
      'messages',
      'feed:',
      // As the embedded store counts: a wall shout is wall whatever its kind; otherwise a question or a message.
      (
        rows,
      ) => `SELECT CASE WHEN wall THEN 'feed:wall' WHEN kind = 'question' THEN 'feed:questions' ELSE 'feed:messages' END AS name, count(*) AS n FROM ${rows} GROUP BY 1
        UNION ALL SELECT 'feed:verified', count(*) FROM ${rows} WHERE verified HAVING count(*) > 0`,
    ],
    [
      'drift_samples',
      'drift:',
      (rows) => `SELECT 'drift:verdict:' || verdict AS name, count(*) AS n FROM ${rows} GROUP BY verdict
        UNION ALL SELECT 'drift:samples', count(*) FROM ${rows} HAVING count(*) > 0
        UNION ALL SELECT 'drift:fail_closed', count(*) FROM ${rows} WHERE fail_closed HAVING count(*) > 0
        UNION ALL SELECT 'drift:contractions', sum(contraction_attempts) FROM ${rows} HAVING sum(contraction_attempts) > 0`,
    ],
  ];
  // Counter rows are locked in name order, so two transactions never wait for each other crosswise.
  const add = (
    select: string,
  ) => `INSERT INTO counts AS k (name, shard, n) SELECT name, pg_backend_pid() % 64, n FROM (${select}) d ORDER BY name
      ON CONFLICT (name, shard) DO UPDATE SET n = k.n + excluded.n;`;
  const negated = (select: string) => `SELECT name, -n AS n FROM (${select}) o`;
  const netted = (select: string) => `SELECT name, sum(n) AS n FROM (${select}) u GROUP BY name HAVING sum(n) <> 0`;
  return [
    `CREATE TABLE counts (name text NOT NULL, shard integer NOT NULL, n bigint NOT NULL, PRIMARY KEY (name, shard));`,
    // One row per embedded store moved in by npm run move-to-postgres: where it got to (a move resumes there), and when it ended.
    `CREATE TABLE store_moves (source text PRIMARY KEY, progress jsonb NOT NULL DEFAULT '{}', started_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz);`,
    ...tables.map(
      ([table, prefix, select]) => `
      CREATE FUNCTION count_${table}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${add(select('new_rows'))}
        ELSIF TG_OP = 'DELETE' THEN ${add(negated(select('old_rows')))}
        ELSIF TG_OP = 'UPDATE' THEN ${add(netted(`${select('new_rows')} UNION ALL ${negated(select('old_rows'))}`))}
        ELSE DELETE FROM counts WHERE starts_with(name, '${prefix}');
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER ${table}_counted_insert AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_${table}();
      CREATE TRIGGER ${table}_counted_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_${table}();
      CREATE TRIGGER ${table}_counted_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_${table}();
      CREATE TRIGGER ${table}_counted_truncate AFTER TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION count_${table}();
      INSERT INTO counts (name, shard, n) SELECT name, 0, n FROM (${select(table)}) d;`,
    ),
  ].join('\n');
}

/** Serialises the processes that migrate at once; taken per transaction, never held by a session. */
const MIGRATION_LOCK = 7243001;

/**
 * Applies the migrations not applied yet, one transaction each. Several processes may start at
 * once: each transaction first takes a transaction-scoped advisory lock and reads what is applied
 * under it. Nothing outlives a transaction (no session lock, no SET), so this runs the same
 * through PgBouncer in transaction pooling as against PostgreSQL itself.
 */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  // A connection lost mid-migration fails the statement running; unheard, its 'error' would end the process.
  client.on('error', () => undefined);
  const locked = async <T>(work: () => Promise<T>): Promise<T> => {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const result = await work();
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  };
  try {
    await locked(() =>
      client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      ),
    );
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      const done = await locked(async () => {
        const found = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
        if (found.rowCount) return true;
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        return false;
      });
      if (!done) applied.push(m.version);
    }
    await backfillNameKeys(client);
    return applied;
  } finally {
    client.release();
  }
}
