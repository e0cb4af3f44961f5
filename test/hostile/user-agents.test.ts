import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlled, type ControlledServer } from './control.ts';
import { METRICS_TOKEN, metric, ordinary, pool, quantile } from './probe.ts';
import { waitFor } from '../helpers/wait.ts';

// Thousands of distinct 8 KB bot User-Agents. Only a prefix of each is classified
// and the classification cache is bounded in bytes (UA_PREFIX_CHARS, CLASSIFY_CACHE_BYTES), so the
// heap stays flat and ordinary requests stay prompt. Before, each whole User-Agent was classified
// and cached (10,000 entries of up to 16 KB): 3,000 of them held ~50 MB and ran at ~150 a second.
let server: ControlledServer;
beforeAll(async () => {
  server = await controlled({ DATA_DIR: ':memory:', METRICS_TOKEN });
});
afterAll(async () => {
  await server.stop();
});

const ATTACKS = 3000;
/** A bot User-Agent of ~8 KB, distinct in its first 100 characters and all along. */
const userAgent = (i: number) =>
  `Mozilla/5.0 (compatible; XyzBot-${i}/1.0; +https://x.example/${randomBytes(24).toString('hex')}) ${randomBytes(4000).toString('hex')}`;

describe('distinct 8 KB bot User-Agents', () => {
  it(`${ATTACKS} of them leave the heap within a few MB and every one is answered`, async () => {
    // Idle: the same ordinary request on the same server, after a warm-up.
    let probe = ordinary(server);
    await waitFor(probe.count, { until: (n) => n >= 100, timeoutMs: 10_000, what: 'warm-up reads' });
    await probe.stop();
    probe = ordinary(server);
    await waitFor(probe.count, { until: (n) => n >= 300, timeoutMs: 10_000, what: 'idle reads' });
    const idle = await probe.stop();
    await server.gc();
    const heapBefore = await metric(server, 'nodejs_heap_size_used_bytes');

    probe = ordinary(server);
    const statuses = new Map<number, number>();
    const started = performance.now();
    await pool(ATTACKS, 6, async (i) => {
      const res = await fetch(`${server.url}/api/convert`, { headers: { 'User-Agent': userAgent(i) } });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    });
    const seconds = (performance.now() - started) / 1000;
    const during = await probe.stop();
    await server.gc();
    const heapAfter = await metric(server, 'nodejs_heap_size_used_bytes');

    expect([...statuses.keys()]).toEqual([200]);
    // The User-Agents were read as bots (the ledger counted each), so the attack reached the classifier;
    // their invented names share the ledger's bounded pool, never a row each.
    const wall = (await (await fetch(`${server.url}/bot-wall.json`)).json()) as {
      meters: { observed_bot_requests: number };
    };
    expect(wall.meters.observed_bot_requests).toBeGreaterThanOrEqual(ATTACKS);
    expect(await metric(server, 'agentnode_ledger_families')).toBeLessThan(100);
    // Read after full collections: what the server keeps. 3,000 whole User-Agents cached held ~50 MB.
    const growthMb = (heapAfter - heapBefore) / 2 ** 20;
    expect(growthMb).toBeLessThan(8);
    // Speed is a benchmark's, not a test's (`npm run bench:hostile`, row 9, against idle): printed here.
    const p50 = quantile(during, 0.5);
    const p99 = quantile(during, 0.99);
    console.log(
      `${ATTACKS} User-Agents in ${seconds.toFixed(1)} s; heap ${growthMb.toFixed(1)} MB; ordinary p50/p99 idle ${quantile(idle, 0.5).toFixed(1)}/${quantile(idle, 0.99).toFixed(1)} ms, during ${p50.toFixed(1)}/${p99.toFixed(1)} ms`,
    );
  });
});
