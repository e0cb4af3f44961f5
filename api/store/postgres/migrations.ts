import type pg from 'pg';

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
];

/** Applies the migrations not applied yet, one transaction each, under an advisory lock (several processes may start at once). */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  // A connection lost mid-migration fails the statement running; unheard, its 'error' would end the process.
  client.on('error', () => undefined);
  try {
    await client.query('SELECT pg_advisory_lock(7243001)');
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
        applied.push(m.version);
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock(7243001)').catch(() => undefined);
    client.release();
  }
}
