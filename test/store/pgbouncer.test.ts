import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';
import { clusterAvailable, startCluster, type PgCluster } from '../helpers/pg-cluster.ts';
import { pgbouncerAvailable, startBouncer, type Bouncer } from '../helpers/pgbouncer.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// PgBouncer in transaction pooling, the usual way past PostgreSQL's connection limit: a server
// connection serves whichever client has a transaction, so nothing may be set per session (no
// startup parameter, no SET, no session lock). Two processes run through a bouncer of this file's
// own, in front of a cluster of its own that the tests stop and restart.
const available = clusterAvailable() && pgbouncerAvailable();

interface Answer {
  status: number;
  code?: string;
  memberId?: string;
}

describe.runIf(available)('through PgBouncer in transaction pooling', () => {
  let cluster: PgCluster;
  let bouncer: Bouncer;
  let db: pg.Pool;
  let viaBouncer: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    cluster = await startCluster();
    const direct = await cluster.createDatabase('agentnode_bouncer');
    db = new pg.Pool({ connectionString: direct, max: 2 });
    db.on('error', () => undefined);
    // A pool smaller than the two processes' together: server connections are shared by transaction.
    bouncer = await startBouncer(cluster.port, 6);
    viaBouncer = bouncer.through(direct);
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) await s.stop();
    await db?.end();
    await bouncer?.stop();
    await cluster?.stop();
  });

  const start = async () => {
    const s = await startServerProcess({
      DATABASE_URL: viaBouncer,
      WRITE_RATE_LIMIT: '1000000',
      PG_POOL_SIZE: '8',
      TELEMETRY_FLUSH_MS: '500',
    });
    servers.push(s);
    return s;
  };
  const oath = async (server: ServerProcess, key?: string): Promise<Answer> => {
    const response = await fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
      body: JSON.stringify({ name: `bouncer-${randomUUID()}`, purpose: 'Pass through the pooler.' }),
      signal: AbortSignal.timeout(15_000),
    });
    const body = (await response.json()) as { code?: string; memberId?: string };
    return {
      status: response.status,
      ...(body.code ? { code: body.code } : {}),
      ...(body.memberId ? { memberId: body.memberId } : {}),
    };
  };
  const ready = async (server: ServerProcess) =>
    (await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(10_000) })).status;

  it('a process started while PostgreSQL is down serves 503 STORE_UNAVAILABLE, says so once at error, and becomes ready when it is back', async () => {
    await cluster.halt();
    const first = await start();
    expect(await ready(first)).toBe(503);
    expect(await oath(first)).toMatchObject({ status: 503, code: 'STORE_UNAVAILABLE' });
    expect(await oath(first, randomUUID())).toMatchObject({ status: 503, code: 'STORE_UNAVAILABLE' });
    expect(first.child.exitCode).toBeNull();
    const errors = first.logs.filter((l) => /"level":50/.test(l));
    expect(errors, 'one error line for the outage').toHaveLength(1);
    expect(errors[0]).not.toMatch(/"stack"/);

    await cluster.start();
    await waitFor(() => ready(first), { until: (s) => s === 200, timeoutMs: 15_000, what: '/readyz 200' });
    expect(await oath(first)).toMatchObject({ status: 201 });
    await first.waitForLog((l) => /"level":30/.test(l) && /PostgreSQL answers/.test(l));
  }, 60_000);

  it('two processes take a load of oaths with and without keys, across a PostgreSQL restart behind the bouncer, and lose no acknowledged one', async () => {
    const [a, b] = [servers[0] ?? (await start()), await start()];
    const answers: Answer[] = [];
    let restarted: Promise<void> | undefined;
    let over = Infinity;
    const worker = async (i: number) => {
      const server = i % 2 ? a : b;
      while (answers.length < over + 40) {
        answers.push(await oath(server, answers.length % 2 ? randomUUID() : undefined));
        if (answers.length >= 60)
          restarted ??= cluster.restart().finally(() => {
            over = answers.length;
          });
      }
    };
    await Promise.all(Array.from({ length: 12 }, (_, i) => worker(i)));
    await restarted;

    for (const s of [a, b]) expect(s.child.exitCode, 'a server exited').toBeNull();
    const odd = answers.filter((x) => x.status !== 201 && !(x.status === 503 && x.code === 'STORE_UNAVAILABLE'));
    expect(odd, 'answers other than 201 and 503 STORE_UNAVAILABLE').toEqual([]);
    const acknowledged = answers.filter((x) => x.status === 201).map((x) => x.memberId!);
    expect(acknowledged.length).toBeGreaterThan(60);
    const saved = await db.query('SELECT 1 FROM citizens WHERE member_id = ANY($1::uuid[])', [acknowledged]);
    expect(saved.rowCount, 'every acknowledged oath is saved').toBe(acknowledged.length);
    // Both take oaths again by themselves.
    for (const s of [a, b])
      await waitFor(() => oath(s, randomUUID()), { until: (x) => x.status === 201, timeoutMs: 15_000, what: 'a 201' });
    // Nothing logged that PgBouncer refused (an unsupported startup parameter, a prepared statement).
    expect(bouncer.logs.filter((l) => /unsupported startup parameter|prepared statement/.test(l))).toEqual([]);
  }, 120_000);

  it('claims a Web Bot Auth nonce once among 20 claims at once from two stores sharing the bouncer', async () => {
    const stores = [await openPostgresStore(viaBouncer), await openPostgresStore(viaBouncer)];
    try {
      const expires = Math.floor(Date.now() / 1000) + 60;
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, i) => stores[i % 2]!.telemetry.claimNonce!('ChatGPT-User', 'bounced', expires)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(bouncer.logs.filter((l) => /prepared statement/.test(l))).toEqual([]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
