import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../api/config.ts';
import { startServer } from '../api/server.ts';

// The server of bench:hostile: `npm start` plus a channel that reports its memory after a full
// collection (run with --expose-gc), so growth is measured once the server has settled.
const running = await startServer(loadConfig(), {
  logDestination: { write: (_chunk: string, callback?: () => void) => void callback?.() },
});
const gc = (globalThis as { gc?: () => void }).gc;
// The event loop's own delay and the CPU the server used since the last report: they tell an attack
// that blocks the loop from one that only competes with the ordinary client for the machine's cores.
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let cpu = process.cpuUsage();
let since = performance.now();
process.on('message', (message) => {
  if (message !== 'memory') return;
  const used = process.cpuUsage(cpu);
  const loop = {
    loopP99: delay.percentile(99) / 1e6,
    loopMax: delay.max / 1e6,
    cpuShare: (used.user + used.system) / 1000 / (performance.now() - since),
  };
  gc?.();
  gc?.();
  const { rss, heapUsed, heapTotal } = process.memoryUsage();
  running.server.getConnections((_error, connections) =>
    process.send?.({ rss, heapUsed, heapTotal, connections, ...loop }),
  );
  delay.reset();
  cpu = process.cpuUsage();
  since = performance.now();
});
process.send?.({ url: `http://127.0.0.1:${(running.server.address() as { port: number }).port}` });
process.on('SIGTERM', () => void running.close().then(() => process.exit(0)));
