import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startRelay, type Relay } from '../helpers/pg-cluster.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// The stall sweep (SEND_TIMEOUT_MS) ends connections whose client takes no byte. A client waiting
// while the server works on its answer is not stalled: here PostgreSQL holds its reply (a relay
// that forwards the query and keeps the answer) for longer than SEND_TIMEOUT_MS, and the client
// must get the store's own answer (503 once the query times out), not a closed connection.
const available = await postgresAvailable();
const SEND_TIMEOUT_MS = 1000;
const QUERY_TIMEOUT_MS = 3000;

describe.runIf(available)('a client waiting on the server', () => {
  let relay: Relay | undefined;
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.stop();
    await relay?.close();
    await dropDatabases();
  });

  it('is not closed as stalled while its answer waits on PostgreSQL longer than SEND_TIMEOUT_MS', async () => {
    relay = await startRelay(5432);
    const direct = await freshDatabase();
    server = await startServer({
      DATABASE_URL: direct.replace(/:5432\//, `:${relay.port}/`),
      SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS),
      PG_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      WRITE_RATE_LIMIT: '0',
    });
    relay.set('hold-answers');
    const started = performance.now();
    const res = await fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: `waits-${randomUUID().slice(0, 8)}`, purpose: 'waits on the store' }),
    });
    const body = (await res.json()) as { code?: string };
    const waited = performance.now() - started;
    relay.set('forward');
    expect(res.status).toBe(503);
    expect(body.code).toBe('STORE_UNAVAILABLE');
    // Answered after the sweep's bound had passed with no byte moving: the sweep left it alone.
    expect(waited).toBeGreaterThan(SEND_TIMEOUT_MS);
  });
});
