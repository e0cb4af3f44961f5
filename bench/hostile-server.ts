import { loadConfig } from '../api/config.ts';
import { startServer } from '../api/server.ts';

// The server of bench:hostile: `npm start` plus a channel that reports its memory after a full
// collection (run with --expose-gc), so growth is measured once the server has settled.
const running = await startServer(loadConfig(), { logDestination: { write: (_chunk: string, callback?: () => void) => void callback?.() } });
const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (message) => {
  if (message !== 'memory') return;
  gc?.();
  gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  process.send?.({ rss, heapUsed });
});
process.send?.({ url: `http://127.0.0.1:${(running.server.address() as { port: number }).port}` });
process.on('SIGTERM', () => void running.close().then(() => process.exit(0)));
