import type pg from 'pg';
import type { EmbeddedHoldings } from '../embedded/embedded-store.ts';
import type { Page, PageQuery, Store } from '../types.ts';
import { damageLine, scrubStore } from '../embedded/salvage.ts';

/**
 * Copies what an embedded store holds into a PostgreSQL database (`npm run move-to-postgres`):
 * a batch per transaction, every insert idempotent (ON CONFLICT DO NOTHING), and where each list
 * got to saved with its batch in `store_moves`, so an interrupted move resumes where it stopped.
 * The source is read through its own interface, so whatever its files look like, the move reads
 * what the service served. Nothing but the move writes to the database until it is done.
 */

/** Where a move stands: a database holds at most one, and a finished one is never run again. */
export type MoveState = { state: 'new' | 'resumed'; progress: Progress } | { state: 'finished'; finishedAt: Date };

/** Saved progress: for each list, its newest id when the copy started, the cursor reached, how many copied. */
type Progress = Record<string, { top: string | null; cursor: string | null; copied: number; done: boolean }>;

// What a service writes: a database holding any of it is not a move's target.
const SERVICE_TABLES = ['citizens', 'messages', 'receipts', 'drift_samples', 'drift_windows', 'idempotency'];

/** The move of `source` into this database: started now, resumed, or already finished. Refuses a database that holds other data. */
export async function startMove(client: pg.ClientBase, source: string): Promise<MoveState> {
  const row = (
    await client.query<{ progress: Progress; finished_at: Date | null }>(
      'SELECT progress, finished_at FROM store_moves WHERE source = $1',
      [source],
    )
  ).rows[0];
  if (row?.finished_at) return { state: 'finished', finishedAt: row.finished_at };
  if (row) return { state: 'resumed', progress: row.progress };
  const other = (await client.query<{ source: string }>('SELECT source FROM store_moves LIMIT 1')).rows[0];
  if (other)
    throw new MoveRefused(`the database already holds another move (${other.source}); move into a fresh database`);
  for (const table of SERVICE_TABLES) {
    if ((await client.query(`SELECT 1 FROM ${table} LIMIT 1`)).rowCount)
      throw new MoveRefused(`the database already holds data (table ${table} has rows); move into a fresh database`);
  }
  await client.query('INSERT INTO store_moves (source) VALUES ($1)', [source]);
  return { state: 'new', progress: {} };
}

export const finishMove = (client: pg.ClientBase, source: string) =>
  client.query('UPDATE store_moves SET finished_at = now() WHERE source = $1', [source]);

/** A move that must not run: the message says why and what to do. */
export class MoveRefused extends Error {
  override readonly name = 'MoveRefused';
}

async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

// Each batch goes as one JSON parameter, read back into rows by PostgreSQL.
const INSERT = {
  citizens: `INSERT INTO citizens (member_id, name, class, purpose, home_url, status, joined_at, passport_hash)
    SELECT "memberId", name, class, purpose, "homeUrl", status, "joinedAt", "passportHash" FROM jsonb_to_recordset($1::jsonb)
      AS r("memberId" uuid, name text, class text, purpose text, "homeUrl" text, status text, "joinedAt" timestamptz, "passportHash" text)
    ON CONFLICT (member_id) DO NOTHING`,
  messages: `INSERT INTO messages (id, name, kind, message, citizen_id, verified, wall, created_at)
    SELECT id, name, kind, message, "citizenId", verified, wall, "createdAt" FROM jsonb_to_recordset($1::jsonb)
      AS r(id uuid, name text, kind text, message text, "citizenId" uuid, verified boolean, wall boolean, "createdAt" timestamptz)
    ON CONFLICT (id) DO NOTHING`,
  // A receipt is kept as the text it was hashed from (JSON.stringify of its object, as the store writes it).
  receipts: `INSERT INTO receipts (idx, id, receipt) SELECT (r->>'index')::bigint, r->>'id', r->>'text' FROM jsonb_array_elements($1::jsonb) r ON CONFLICT (idx) DO NOTHING`,
  idempotency: `INSERT INTO idempotency (key_hash, fingerprint, status, sealed, created_at)
    SELECT "keyHash", fingerprint, status, sealed, "createdAt" FROM jsonb_to_recordset($1::jsonb)
      AS r("keyHash" text, fingerprint text, status integer, sealed text, "createdAt" timestamptz)
    ON CONFLICT (key_hash) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status, sealed = excluded.sealed, created_at = excluded.created_at`,
  // Least recently moved first, so each window's place among moves (moved_seq) follows the order it had.
  windows: `INSERT INTO drift_windows (entity_id, deltas, moved_at)
    SELECT w->>0, ARRAY(SELECT jsonb_array_elements_text(w->1)::float8), to_timestamp((w->>2)::float8 / 1000) FROM jsonb_array_elements($1::jsonb) w
    ON CONFLICT (entity_id) DO UPDATE SET deltas = excluded.deltas, moved_at = excluded.moved_at, moved_seq = excluded.moved_seq`,
  samples: `INSERT INTO drift_samples (decision_id, entity_id, verdict, sample, contraction_attempts, fail_closed, at)
    SELECT (s->>'decision_id')::uuid, s->>'entity_id', s->>'verdict', s, (s->>'contraction_attempts')::int, (s->>'fail_closed')::boolean, (s->>'at')::timestamptz
    FROM jsonb_array_elements($1::jsonb) s ON CONFLICT (decision_id) DO NOTHING`,
};

export interface MoveOptions {
  source: Store;
  holdings: EmbeddedHoldings;
  /** Names the source in store_moves. */
  sourceId: string;
  pool: pg.Pool;
  progress: Progress;
  /** Rows per transaction. */
  batch: number;
  report: (line: string) => void;
}

/** ", of N (p%), r/s, t s left": how far a list's copy is and when it ends, at the rate of this run. */
export function pace(
  copied: number,
  total: number,
  copiedHere: number,
  started: number,
  now = performance.now(),
): string {
  const seconds = (now - started) / 1000;
  const rate = seconds > 0 ? copiedHere / seconds : 0;
  const left = Math.max(0, total - copied);
  const share = total > 0 ? Math.min(100, Math.floor((100 * copied) / total)) : 100;
  const eta = left === 0 ? '' : rate > 0 ? `, ${Math.ceil(left / rate)} s left` : '';
  return `, of ${total} (${share}%), ${Math.round(rate)}/s${eta}`;
}

/** Copies everything; safe to run again after any interruption. */
export async function copyStore(o: MoveOptions): Promise<void> {
  const save = (client: pg.PoolClient, part: string, value: Progress[string]) =>
    client.query(
      'UPDATE store_moves SET progress = progress || jsonb_build_object($2::text, $3::jsonb) WHERE source = $1',
      [o.sourceId, part, JSON.stringify(value)],
    );

  /** A newest-first list, a page per transaction, from where the last run saved it got to. */
  async function copyList<T>(
    part: string,
    list: (q: PageQuery) => Promise<Page<T>>,
    idOf: (t: T) => string,
    insert: string,
    rows: (items: T[]) => unknown,
    total: number,
  ) {
    const started = performance.now();
    let copiedHere = 0;
    const newest = (await list({ limit: 1 })).items[0];
    const top = newest ? idOf(newest) : null;
    const saved = o.progress[part];
    // Copied before from the same list: go on from there. The list had new items on top since
    // (the old service ran again): copy it all again, skipping what is there already.
    let at = saved?.top === top ? saved : { top, cursor: null, copied: 0, done: false };
    if (at.done) return o.report(`${part}: ${at.copied} copied before`);
    for (;;) {
      const page = await list({ limit: o.batch, cursor: at.cursor });
      const next = {
        top,
        cursor: page.nextCursor,
        copied: at.copied + page.items.length,
        done: page.nextCursor === null,
      };
      await transaction(o.pool, async (client) => {
        if (page.items.length > 0) await client.query(insert, [JSON.stringify(rows(page.items))]);
        await save(client, part, next);
      });
      at = next;
      copiedHere += page.items.length;
      o.report(`${part}: ${at.copied}${at.done ? ' (all)' : ''}${pace(at.copied, total, copiedHere, started)}`);
      if (at.done) return;
    }
  }

  /**
   * What is not a list (records that expire, windows that change, totals): few beside the lists,
   * so copied whole at each run, in batches, each row replaced by the source's (the truth until
   * the move is done).
   */
  async function copyAll<T>(
    part: string,
    items: Iterable<T>,
    insert: string,
    after?: (client: pg.PoolClient) => Promise<void>,
  ) {
    let batch: T[] = [];
    let copied = 0;
    const flush = async (last: boolean) =>
      transaction(o.pool, async (client) => {
        if (batch.length > 0) await client.query(insert, [JSON.stringify(batch)]);
        copied += batch.length;
        batch = [];
        if (last) await after?.(client);
      });
    for (const item of items) {
      batch.push(item);
      if (batch.length >= o.batch) await flush(false);
    }
    await flush(true);
    o.report(`${part}: ${copied} (all)`);
  }

  const { source } = o;
  const feed = await source.feed.stats();
  const receipts = (await source.receipts.list({ limit: 1 })).items[0];
  await copyList(
    'citizens',
    (q) => source.citizens.list(q),
    (c) => c.memberId,
    INSERT.citizens,
    (items) => items,
    (await source.citizens.stats()).total,
  );
  await copyList(
    'messages',
    (q) => source.feed.list(q),
    (m) => m.id,
    INSERT.messages,
    (items) => items,
    feed.messages + feed.questions + feed.wall,
  );
  await copyList(
    'receipts',
    (q) => source.receipts.list(q),
    (r) => r.id,
    INSERT.receipts,
    (items) => items.map((r) => ({ index: r.index, id: r.id, text: JSON.stringify(r.receipt) })),
    receipts ? receipts.index + 1 : 0,
  );
  await copyAll('idempotency', o.holdings.idempotency(), INSERT.idempotency);
  await copyAll('windows', o.holdings.windows(), INSERT.windows);

  // The embedded store keeps the drift totals and its last 100 samples, not every sample: the
  // samples are copied, and the totals kept on a counter shard of their own (-1), as what the
  // copied samples do not account for.
  const drift = await source.drift.metrics(100);
  const totals: Record<string, number> = {
    'drift:samples': drift.samples,
    'drift:contractions': drift.contraction_count,
    'drift:fail_closed': drift.fail_closed,
  };
  for (const [verdict, n] of Object.entries(drift.by_verdict)) totals[`drift:verdict:${verdict}`] = n;
  await copyAll('drift', drift.recent, INSERT.samples, async (client) => {
    await client.query(
      `INSERT INTO counts (name, shard, n) SELECT t.key, -1, t.value::bigint - coalesce((SELECT sum(c.n) FROM counts c WHERE c.name = t.key AND c.shard <> -1), 0)
       FROM jsonb_each_text($1::jsonb) t ON CONFLICT (name, shard) DO UPDATE SET n = excluded.n`,
      [JSON.stringify(totals)],
    );
  });

  // The bot ledger goes in as a row no process has saved for long: the first process to start folds it into its own.
  const ledger = await source.telemetry.load(([first]) => first!);
  await copyAll(
    'telemetry',
    ledger ? [{ processId: `moved:${o.sourceId}`, snapshot: ledger }] : [],
    `INSERT INTO telemetry_ledgers (process_id, snapshot, updated_at) SELECT r->>'processId', r->'snapshot', to_timestamp(0) FROM jsonb_array_elements($1::jsonb) r
     ON CONFLICT (process_id) DO UPDATE SET snapshot = excluded.snapshot`,
  );
}

/**
 * Reads every record of the embedded store and checks its checksum before a byte is copied: a
 * damaged store is refused, named (the one line a start gives), never moved with holes in it.
 */
export async function refuseDamagedSource(dir: string): Promise<void> {
  const found = await scrubStore(dir);
  if (found.damage.length > 0) throw new MoveRefused(damageLine(found));
}
