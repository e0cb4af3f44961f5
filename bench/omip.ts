import { compare, load, startChild } from './lib.ts';

// POST /api/omip/score against GET /api/convert on the same gateway, and dual-exchange throughput.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const json = { 'Content-Type': 'application/json' };
const plan = { steps: [{ action: 'read', tool: 'read_convert' }, { action: 'compare', inputs: ['legacy_consensus'] }], weights: { meaning: 0.9, growth: 0.1 } };

const server = await startChild(['api/main.ts'], { DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0', LOG_LEVEL: 'warn' });
try {
  const r = await compare(
    'POST /api/omip/score vs GET /api/convert',
    ROUNDS,
    () => load(`${server.url}/api/omip/score`, { seconds: SECONDS, method: 'POST', headers: json, body: JSON.stringify({ entity_id: 'sovereign-a', plan }), pid: server.child.pid }),
    () => load(`${server.url}/api/convert`, { seconds: SECONDS, pid: server.child.pid }),
  );
  console.log(`target ratio >= 0.6: ${r.ratio >= 0.6 ? 'met' : 'NOT met'}`);
  const dual = await load(`${server.url}/api/omip/dual-exchange`, {
    seconds: SECONDS,
    method: 'POST',
    headers: json,
    body: JSON.stringify({ agents: [{ id: 'sovereign-a', proposal: { plan } }, { id: 'sovereign-b', proposal: { plan } }] }),
  });
  console.log(`POST /api/omip/dual-exchange: ${dual.rps.toFixed(0)} req/s (p99 ${dual.p99} ms)`);
} finally {
  server.child.kill('SIGTERM');
}
