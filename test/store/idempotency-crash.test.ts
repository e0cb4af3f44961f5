import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_LEASE_MS } from '../../api/store/types.ts';
import { clusterAvailable, startCluster, startRelay, type PgCluster, type Relay } from '../helpers/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// A process killed (kill -9) while a keyed write is under way leaves its Idempotency-Key claimed.
// The client retries through another process: it must get an answer within seconds (the claim is
// a lease the dead process no longer renews), and the write must be done exactly once.
const available = clusterAvailable();

describe.runIf(available)('a retry finishes after the process that ran the write was killed', () => {
  let cluster: PgCluster;
  let relay: Relay;
  let db: pg.Pool;
  let direct: string;
  let other: ServerProcess;
  const DATABASE = 'agentnode_crash';

  beforeAll(async () => {
    cluster = await startCluster();
    direct = await cluster.createDatabase(DATABASE);
    relay = await startRelay(cluster.port);
    db = new pg.Pool({ connectionString: direct, max: 2 });
    db.on('error', () => undefined);
    other = await startServerProcess({ DATABASE_URL: direct, WRITE_RATE_LIMIT: '1000000' });
  }, 60_000);

  afterAll(async () => {
    await other?.stop();
    await db?.end();
    await relay?.close();
    await cluster?.stop();
  });

  const oath = (server: ServerProcess, key: string, name: string) =>
    fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ name, purpose: 'Be written exactly once.' }),
      signal: AbortSignal.timeout(15_000),
    });

  /** Retries as a careful client does: waits what Retry-After says; every answer on the way. */
  async function retryUntilAnswered(key: string, name: string) {
    const seen: { status: number; code?: string; retryAfter: string | null }[] = [];
    for (;;) {
      const r = await oath(other, key, name);
      const body = (await r.json()) as { code?: string; memberId?: string };
      seen.push({
        status: r.status,
        ...(body.code ? { code: body.code } : {}),
        retryAfter: r.headers.get('retry-after'),
      });
      if (r.status === 201) return { seen, memberId: body.memberId! };
      expect([409, 503]).toContain(r.status);
      expect(r.headers.get('retry-after'), `${r.status} ${body.code} without Retry-After`).toMatch(/^\d+$/);
      if (seen.length > 30) throw new Error(`no answer: ${JSON.stringify(seen)}`);
      await new Promise((resolve) => setTimeout(resolve, Number(r.headers.get('retry-after')) * 1000));
    }
  }

  const killedMidWrite = async (
    cut: string,
    mode: 'hold' | 'hold-answers',
    written: (name: string) => Promise<boolean>,
  ) => {
    const doomed = await startServerProcess({
      DATABASE_URL: direct.replace(`:${cluster.port}/`, `:${relay.port}/`),
      WRITE_RATE_LIMIT: '1000000',
    });
    const key = randomUUID();
    const name = `crash-${randomUUID()}`;
    relay.cutAt(cut, mode);
    const first = oath(doomed, key, name).catch(() => null);
    // The write is under way: its claim taken, its statement (or its COMMIT) on the wire.
    await waitFor(() => written(name), { timeoutMs: 10_000, what: 'the write under way' });
    doomed.child.kill('SIGKILL');
    await doomed.stop();
    expect(await first).toBeNull();
    const started = performance.now();
    const answer = await retryUntilAnswered(key, name);
    const ms = performance.now() - started;
    relay.set('forward');
    const rows = (await db.query('SELECT member_id FROM citizens WHERE name = $1', [name])).rows;
    return { ...answer, ms, rows };
  };

  it('a write whose statement never reached PostgreSQL is done once, by the retry, within seconds', async () => {
    const { seen, memberId, ms, rows } = await killedMidWrite('INSERT INTO citizens', 'hold', async () => {
      const r = await db.query("SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'", [
        DATABASE,
      ]);
      return (r.rowCount ?? 0) > 0;
    });
    expect(rows).toEqual([{ member_id: memberId }]);
    // The dead process's lease lapses unrenewed; Retry-After paces the client meanwhile.
    expect(seen.some((s) => s.status === 409 && s.code === 'IDEMPOTENCY_IN_FLIGHT')).toBe(true);
    expect(ms).toBeLessThan(IDEMPOTENCY_LEASE_MS + 5000);
  }, 60_000);

  it('a write that committed as its process died is replayed to the retry, not done again', async () => {
    const { memberId, ms, rows } = await killedMidWrite(
      'COMMIT',
      'hold-answers',
      async (name) => ((await db.query('SELECT 1 FROM citizens WHERE name = $1', [name])).rowCount ?? 0) > 0,
    );
    expect(rows).toEqual([{ member_id: memberId }]);
    expect(ms).toBeLessThan(IDEMPOTENCY_LEASE_MS + 5000);
  }, 60_000);
});
