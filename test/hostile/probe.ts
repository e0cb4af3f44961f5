import type { TestServer } from '../helpers/server.ts';

/** A METRICS_TOKEN for the servers of the hostile suite (at least 32 characters). */
export const METRICS_TOKEN = 'hostile-suite-metrics-token-0123456789abcdef';

/** One sample of a Prometheus metric without labels (or the sum over its label sets), read from GET /metrics. */
export async function metric(server: TestServer, name: string): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  const lines = text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  if (lines.length === 0) throw new Error(`no metric ${name}`);
  return lines.reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Times ordinary GET /api/convert requests, one after the other, until stopped; returns the sorted latencies (ms). */
export function ordinary(server: TestServer): { count: () => number; stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      const res = await fetch(`${server.url}/api/convert`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET /api/convert answered ${res.status}`);
      latencies.push(performance.now() - started);
    }
  })();
  return {
    /** Requests timed so far. */
    count: () => latencies.length,
    stop: async () => {
      stopped = true;
      await loop;
      return latencies.sort((a, b) => a - b);
    },
  };
}

/** The q-quantile of sorted values. */
export const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;

/** Runs `total` tasks, `concurrency` at a time. */
export async function pool(total: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await task(next++);
    }),
  );
}
