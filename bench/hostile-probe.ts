import { Agent, request } from 'node:http';

// The ordinary client of bench:hostile, in a process of its own: timed in the attacker's process,
// its latency included the attack generator's own event-loop work, not only the server's.
// GET <url>/api/convert from two keep-alive connections, one request after the other, until the
// parent says 'stop'; then it sends back the p99 in ms (timed in µs; autocannon rounds to ms).
const url = process.argv[2]!;
const agent = new Agent({ keepAlive: true, maxSockets: 2 });
const latencies: number[] = [];
let stopped = false;

/** The first second is warm-up (connections, this process's JIT): not counted, and the parent starts the attack after it. */
const WARM_UP_MS = 1000;
const born = performance.now();

const once = () =>
  new Promise<void>((resolve) => {
    const started = performance.now();
    const req = request(`${url}/api/convert`, { agent }, (res) => {
      res.resume();
      res.on('end', () => {
        if (started - born >= WARM_UP_MS) latencies.push(performance.now() - started);
        resolve();
      });
    });
    req.on('error', () => resolve());
    req.end();
  });
const loops = Array.from({ length: 2 }, async () => {
  while (!stopped) await once();
});

process.on('message', async (message) => {
  if (message !== 'stop') return;
  stopped = true;
  await Promise.all(loops);
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  process.send!({ p99: Math.round(sorted[Math.floor(sorted.length * 0.99)]! * 100) / 100, requests: sorted.length });
  process.disconnect();
});
// Ready once warm: the attack starts then, and every request it can slow down is counted.
setTimeout(() => process.send!({ ready: true }), WARM_UP_MS);
