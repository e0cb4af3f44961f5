import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clusterAvailable, startCluster, startRelay, type PgCluster, type Relay } from '../helpers/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// PostgreSQL restarting, failing over, partitioned or refusing connections is an
// ordinary event. The service talks to a cluster this file owns, through a relay it controls.
const available = clusterAvailable();

/** The bound a request that needs PostgreSQL keeps while PostgreSQL does not answer. */
const BOUND_MS = 5000;

interface Answer {
  status: number | 'hang';
  ms: number;
  memberId?: string;
  code?: string;
  detail?: string;
}

describe.runIf(available)('PostgreSQL failures are ordinary events', () => {
  let cluster: PgCluster;
  let relay: Relay;
  let server: ServerProcess;
  /** The test's own connections: straight to the cluster, never through the relay. */
  let db: pg.Pool;
  let admin: pg.Pool;
  const DATABASE = 'agentnode_faults';
  let exits: string[] = [];
  let serviceUrl: string;

  beforeAll(async () => {
    cluster = await startCluster();
    const direct = await cluster.createDatabase(DATABASE);
    relay = await startRelay(cluster.port);
    db = new pg.Pool({ connectionString: direct, max: 2 });
    admin = new pg.Pool({ connectionString: cluster.adminUrl, max: 1 });
    for (const p of [db, admin]) p.on('error', () => undefined);
    serviceUrl = direct.replace(`:${cluster.port}/`, `:${relay.port}/`);
  });

  // A test whose fault ended the process leaves the next one a new process, so each fails for its own reason.
  beforeEach(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null && exits.length === 0) return;
    exits = [];
    // Writes are limited (the limiter's table is in the same database) but the budget never runs out here.
    const started = await startServerProcess({
      DATABASE_URL: serviceUrl,
      WRITE_RATE_LIMIT: '1000000',
      TELEMETRY_FLUSH_MS: '500',
      // A lost idle connection is an expected event, logged at debug: the tests below wait for that line.
      LOG_LEVEL: 'debug',
    });
    started.child.on('exit', (code, signal) =>
      exits.push(
        `exit ${code} ${signal}: ${started.logs
          .filter((l) => /rror/.test(l))
          .slice(0, 3)
          .join('\n')}`,
      ),
    );
    server = started;
  });

  afterAll(async () => {
    await server?.stop();
    await db?.end();
    await admin?.end();
    await relay?.close();
    await cluster?.stop();
  });

  const alive = () => expect(exits, 'the server process exited').toEqual([]);

  async function call(path: string, init: RequestInit = {}): Promise<Answer> {
    const started = performance.now();
    try {
      const response = await fetch(server.url + path, { ...init, signal: AbortSignal.timeout(BOUND_MS * 3) });
      const text = await response.text();
      const body = /json/.test(response.headers.get('content-type') ?? '') && text ? JSON.parse(text) : {};
      return {
        status: response.status,
        ms: performance.now() - started,
        ...(body.memberId ? { memberId: body.memberId } : {}),
        ...(body.code ? { code: body.code, detail: body.detail } : {}),
      };
    } catch (error) {
      if ((error as Error).name !== 'TimeoutError') throw error;
      return { status: 'hang', ms: performance.now() - started };
    }
  }
  const oath = (name = `fault-${randomUUID()}`, key?: string) =>
    call('/api/citizenship/oath', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
      body: JSON.stringify({ name, purpose: 'Stay through the database failing.' }),
    });

  /**
   * Oaths, `concurrency` at a time: `fault` runs once `before` have been answered, and the burst
   * goes on until `after` more were answered once the fault was over.
   */
  async function burst(fault: () => Promise<unknown>, { concurrency = 8, before = 20, after = 40 } = {}) {
    const answers: Answer[] = [];
    let faulted: Promise<unknown> | undefined;
    let over = Infinity;
    const worker = async () => {
      while (answers.length < over + after) {
        answers.push(await oath());
        if (answers.length >= before)
          faulted ??= fault().finally(() => {
            over = answers.length;
          });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await faulted;
    return answers;
  }

  /** The service takes oaths (after a fault, one call at a time finds out whether PostgreSQL is back). */
  const takesOaths = () =>
    waitFor(() => oath(), { until: (a) => a.status === 201, timeoutMs: 10_000, what: 'an oath answered 201' });

  /** Every answer 201 or 503, every 201 a row, and the service takes oaths again by itself. */
  async function expectOrdinary(answers: Answer[]) {
    alive();
    const statuses = [...new Set(answers.map((a) => a.status))];
    expect(
      statuses.filter((s) => s !== 201 && s !== 503),
      `answers other than 201 and 503: ${JSON.stringify(answers.filter((a) => a.status !== 201 && a.status !== 503).slice(0, 3))}`,
    ).toEqual([]);
    for (const a of answers.filter((a) => a.status === 503)) expect(a.code).toBe('STORE_UNAVAILABLE');
    const acknowledged = answers.filter((a) => a.status === 201).map((a) => a.memberId!);
    const saved = (
      await db.query<{ member_id: string }>('SELECT member_id FROM citizens WHERE member_id = ANY($1::uuid[])', [
        acknowledged,
      ])
    ).rows.length;
    expect(saved, 'every acknowledged oath is in the database').toBe(acknowledged.length);
    await takesOaths();
    alive();
  }

  it('keeps running when its idle connections are terminated (a restart or failover), and takes oaths again', async () => {
    await takesOaths();
    const from = server.logs.length;
    expect(await cluster.terminateBackends(DATABASE)).toBeGreaterThan(0);
    // The pool hears of it on its idle connections: an unhandled 'error' ended the process.
    await server.waitForLog((line) => line.includes('an idle connection was lost'), { from });
    alive();
    await expectOrdinary([]);
  });

  it('answers 201 or 503 while its backends are terminated during an oath burst, and loses no acknowledged oath', async () => {
    const answers = await burst(async () => {
      const made = relay.opened();
      await cluster.terminateBackends(DATABASE);
      // Again once the pool has connected anew.
      await waitFor(relay.opened, { until: (n) => n > made, what: 'a connection made after the first termination' });
      await cluster.terminateBackends(DATABASE);
    });
    await expectOrdinary(answers);
  });

  it('answers 201 or 503 while PostgreSQL restarts during an oath burst', async () => {
    const answers = await burst(() => cluster.restart());
    await expectOrdinary(answers);
  });

  it('answers 201 or 503 when every connection is reset (TCP RST) during an oath burst', async () => {
    const answers = await burst(async () => {
      const made = relay.opened();
      relay.reset();
      // Again once the pool has connected anew.
      await waitFor(relay.opened, { until: (n) => n > made, what: 'a connection made after the first reset' });
      relay.reset();
    });
    await expectOrdinary(answers);
  });

  it(`answers every request that needs PostgreSQL 503 within ${BOUND_MS / 1000} s while it is unreachable, reads too, and heals by itself`, async () => {
    await takesOaths();
    const keyed = { name: `partitioned-${randomUUID()}`, key: randomUUID() };
    relay.set('hold');
    try {
      const paths = [
        '/api/citizens',
        '/api/intelligence/feed',
        '/bot-wall.json',
        '/bot-wall',
        '/api/scoreboard',
        '/api/omip/receipts',
        '/api/omip/drift',
      ];
      const answers = await Promise.all([
        ...paths.map((p) => call(p).then((a) => ({ ...a, what: `GET ${p}` }))),
        ...Array.from({ length: 12 }, () => oath().then((a) => ({ ...a, what: 'oath' }))),
        oath(keyed.name, keyed.key).then((a) => ({ ...a, what: 'keyed oath' })),
        call('/readyz').then((a) => ({ ...a, what: 'readyz' })),
      ]);
      const late = answers
        .filter((a) => a.status !== 503 || a.ms > BOUND_MS)
        .map((a) => `${a.what}: ${a.status} in ${Math.round(a.ms)} ms`);
      expect(late, 'answers that were not 503 within the bound').toEqual([]);
      // Once it knows, the next ones do not wait.
      const again = await Promise.all(paths.map((p) => call(p)));
      expect(again.map((a) => a.status)).toEqual(paths.map(() => 503));
      alive();
    } finally {
      relay.set('forward');
    }
    await expectOrdinary([]);
    expect((await waitFor(() => call('/readyz'), { until: (a) => a.status === 200, what: 'ready again' })).status).toBe(
      200,
    );
    const retry = await waitFor(() => oath(keyed.name, keyed.key), {
      until: (a) => a.status === 201,
      timeoutMs: 10_000,
      what: 'the keyed oath retried',
    });
    expect((await db.query('SELECT member_id FROM citizens WHERE name = $1', [keyed.name])).rows).toEqual([
      { member_id: retry.memberId },
    ]);
  });

  // The oath's COMMIT is the one message the relay looks for: from it on, that connection is cut.
  it.each([
    ['PostgreSQL commits it and its answer is lost', 'hold-answers'],
    ['the COMMIT itself is held and arrives late, after the service gave up', 'hold'],
  ] as const)(
    'a write whose commit outcome is unknown answers 503, and its retry with the same Idempotency-Key runs at most once (%s)',
    async (_, hold) => {
      await takesOaths();
      const name = `unknown-${randomUUID()}`;
      const key = randomUUID();
      relay.cutAt('COMMIT\0', hold);
      let first: Answer;
      try {
        first = await oath(name, key);
      } finally {
        relay.set('forward');
      }
      expect(first.status).toBe(503);
      expect(first.detail).toMatch(/may or may not have been saved/);
      expect(first.ms).toBeLessThan(BOUND_MS);
      const retries: Answer[] = [];
      const retry = await waitFor(async () => retries[retries.push(await oath(name, key)) - 1]!, {
        until: (a) => a.status === 201,
        timeoutMs: 15_000,
        what: 'the retry answered 201',
      });
      // While the first run may still commit, a retry is told to wait (409) or that the store cannot answer (503).
      expect(retries.filter((a) => ![201, 409, 503].includes(a.status as number))).toEqual([]);
      const rows = (await db.query<{ member_id: string }>('SELECT member_id FROM citizens WHERE name = $1', [name]))
        .rows;
      expect(rows.map((r) => r.member_id)).toEqual([retry.memberId]);
      alive();
    },
  );

  it('answers reads 200 or 503, never 500, while the database refuses new connections, and /readyz says 503', async () => {
    await takesOaths();
    await Promise.all(Array.from({ length: 4 }, () => call('/api/citizens')));
    await admin.query(`ALTER DATABASE ${DATABASE} ALLOW_CONNECTIONS false`);
    try {
      // More at once than the pooled connections: some need a new one.
      const answers = await Promise.all(Array.from({ length: 30 }, () => call('/api/citizens?limit=5')));
      const statuses = [...new Set(answers.map((a) => a.status))].sort();
      expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(answers.every((a) => a.ms < BOUND_MS)).toBe(true);
      const ready = await waitFor(() => call('/readyz'), {
        until: (a) => a.status !== 200,
        timeoutMs: 3000,
        what: '/readyz not 200',
      });
      expect(ready.status).toBe(503);
    } finally {
      await admin.query(`ALTER DATABASE ${DATABASE} ALLOW_CONNECTIONS true`);
    }
    expect((await waitFor(() => call('/readyz'), { until: (a) => a.status === 200, what: 'ready again' })).status).toBe(
      200,
    );
    await expectOrdinary([]);
  });
});
