import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import type { EmbeddedHoldings } from '../embedded/embedded-store.ts';
import type { Page, PageQuery, ReceiptEntry, Store } from '../types.ts';

/**
 * Checks a finished copy: the PostgreSQL store, read through the interface the service reads it
 * by, answers what the embedded store answered (every citizen, message and receipt, every count,
 * every idempotency record and drift window), and its kept counts equal count(*). Returns the
 * problems found (none: the copy is sound).
 */
export async function checkMove(o: {
  source: Store;
  holdings: EmbeddedHoldings;
  target: Store;
  pool: pg.Pool;
  batch: number;
  report: (line: string) => void;
}): Promise<string[]> {
  const problems: string[] = [];
  const { source, target } = o;
  const same = (what: string, a: unknown, b: unknown) =>
    isDeepStrictEqual(a, b) ||
    (problems.push(`${what}: embedded ${JSON.stringify(a)}, PostgreSQL ${JSON.stringify(b)}`), false);

  const [citizens, feed] = await Promise.all([source.citizens.stats(), source.feed.stats()]);
  same('citizens by class', citizens, await target.citizens.stats());
  same('feed counts', feed, await target.feed.stats());
  const drift = [await source.drift.metrics(100), await target.drift.metrics(100)] as const;
  const totals = (m: (typeof drift)[0]) => ({
    samples: m.samples,
    contractions: m.contraction_count,
    fail_closed: m.fail_closed,
    by_verdict: m.by_verdict,
  });
  same('drift totals', totals(drift[0]), totals(drift[1]));
  same(
    'recent drift samples',
    drift[0].recent.map((s) => s.decision_id).sort(),
    drift[1].recent.map((s) => s.decision_id).sort(),
  );

  // The kept counts against the rows themselves, once.
  const rows = (
    await o.pool.query(
      'SELECT (SELECT count(*) FROM citizens)::bigint AS citizens, (SELECT count(*) FROM messages)::bigint AS messages, (SELECT count(*) FROM drift_samples)::bigint AS samples',
    )
  ).rows[0];
  same('citizen rows', citizens.total, Number(rows.citizens));
  same('message rows', feed.messages + feed.questions + feed.wall, Number(rows.messages));

  /** Both lists, newest first, page by page: every item equal, none missing or extra. */
  async function sameList<T>(
    what: string,
    a: (q: PageQuery) => Promise<Page<T>>,
    b: (q: PageQuery) => Promise<Page<T>>,
  ): Promise<void> {
    let cursors: [string | null, string | null] = [null, null];
    let n = 0;
    do {
      const [pa, pb] = await Promise.all([
        a({ limit: o.batch, cursor: cursors[0] }),
        b({ limit: o.batch, cursor: cursors[1] }),
      ]);
      const differs = pa.items.findIndex((item, i) => !isDeepStrictEqual(item, pb.items[i]));
      if (differs !== -1 || pa.items.length !== pb.items.length) {
        const i = differs === -1 ? Math.min(pa.items.length, pb.items.length) : differs;
        return void problems.push(
          `${what}, item ${n + i} (newest first): embedded ${JSON.stringify(pa.items[i] ?? null)}, PostgreSQL ${JSON.stringify(pb.items[i] ?? null)}`,
        );
      }
      n += pa.items.length;
      cursors = [pa.nextCursor, pb.nextCursor];
      if ((cursors[0] === null) !== (cursors[1] === null))
        return void problems.push(`${what}: one list ends after ${n} items, the other goes on`);
    } while (cursors[0] !== null);
    o.report(`checked ${n} ${what}`);
  }
  await sameList(
    'citizens',
    (q) => source.citizens.list(q),
    (q) => target.citizens.list(q),
  );
  await sameList(
    'messages',
    (q) => source.feed.list(q),
    (q) => target.feed.list(q),
  );
  await sameList(
    'receipts',
    (q) => source.receipts.list(q),
    (q) => target.receipts.list(q),
  );

  /** Records the source holds, looked up on the target a batch at a time. */
  async function sameRecords<T>(
    what: string,
    items: Iterable<T>,
    keyOf: (t: T) => string,
    sql: string,
    fromRow: (row: any) => T,
  ) {
    let batch: T[] = [];
    let n = 0;
    const check = async () => {
      const found = new Map(
        (await o.pool.query(sql, [batch.map(keyOf)])).rows.map((row) => [keyOf(fromRow(row)), fromRow(row)]),
      );
      for (const item of batch) if (!same(`${what} ${keyOf(item)}`, item, found.get(keyOf(item)) ?? null)) return;
      n += batch.length;
      batch = [];
    };
    for (const item of items) {
      batch.push(item);
      if (batch.length >= o.batch) await check();
    }
    await check();
    o.report(`checked ${n} ${what}`);
  }
  await sameRecords(
    'idempotency records',
    o.holdings.idempotency(),
    (r) => r.keyHash,
    'SELECT * FROM idempotency WHERE key_hash = ANY($1)',
    (row) => ({
      keyHash: row.key_hash,
      fingerprint: row.fingerprint,
      status: row.status,
      sealed: row.sealed,
      createdAt: row.created_at.toISOString(),
    }),
  );
  await sameRecords(
    'drift windows',
    o.holdings.windows(),
    ([entityId]) => entityId,
    'SELECT entity_id, deltas, moved_at FROM drift_windows WHERE entity_id = ANY($1)',
    (row): [string, number[], number] => [row.entity_id, row.deltas, row.moved_at.getTime()],
  );

  return problems;
}

/** The receipt log as PostgreSQL holds it, in log order, read a batch at a time. */
export async function* receiptsInOrder(pool: pg.Pool, batch: number): AsyncGenerator<ReceiptEntry> {
  for (let from = 0; ; from += batch) {
    const rows = (
      await pool.query<{ idx: string; id: string; receipt: string }>(
        'SELECT idx, id, receipt FROM receipts WHERE idx >= $1 ORDER BY idx LIMIT $2',
        [from, batch],
      )
    ).rows;
    for (const row of rows)
      yield { index: Number(row.idx), id: row.id, receipt: JSON.parse(row.receipt) as Record<string, unknown> };
    if (rows.length < batch) return;
  }
}
