// What 2,000 keyed 60 KB fingerprint writes leave behind: RSS growth of the server and bytes in its data folder.
// Needs the test build (test-results/dist): run any integration test once first. `N=500 node bench/idempotency-keys.ts`.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServerProcess } from '../test/helpers/server.ts';

const server = await startServerProcess({ WRITE_RATE_LIMIT: '0' });
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) / 1024;
const dataBytes = () =>
  readdirSync(server.dataDir)
    .filter((f) => f.startsWith('journal-') || f === 'snapshot.json')
    .reduce((n, f) => {
      const c = readFileSync(join(server.dataDir, f));
      const e = c.indexOf(0);
      return n + (e === -1 ? c.length : e);
    }, 0);
const N = Number(process.env.N ?? 2000);
// warm up
for (let i = 0; i < 50; i++)
  await (
    await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ document: { i } }),
    })
  ).arrayBuffer();
const [r0, j0] = [rss(), dataBytes()];
for (let i = 0; i < N; i++) {
  const res = await fetch(`${server.url}/api/omip/fingerprint`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': randomUUID() },
    body: JSON.stringify({ document: { i, text: 'z'.repeat(60_000) } }),
  });
  await res.arrayBuffer();
}
await new Promise((r) => setTimeout(r, 1000));
console.log(
  JSON.stringify({
    N,
    rssGrowthMB: +(rss() - r0).toFixed(1),
    dataGrowthKB: +((dataBytes() - j0) / 1024).toFixed(1),
    bytesPerKey: Math.round((dataBytes() - j0) / N),
  }),
);
await server.stop();
