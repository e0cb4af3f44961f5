import { compare, load, startChild } from './lib.ts';
import { consistencyProof } from '../api/omip/merkle.ts';
import { MerkleLog } from '../api/omip/merkle-log.ts';

// POST /api/omip/score against GET /api/convert on the same gateway, and dual-exchange throughput.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const json = { 'Content-Type': 'application/json' };
const plan = {
  steps: [
    { action: 'read', tool: 'read_convert' },
    { action: 'compare', inputs: ['legacy_consensus'] },
  ],
  weights: { meaning: 0.9, growth: 0.1 },
};

// Proofs over a log of 100,000 receipts (in process: the cost is the tree's, not HTTP's).
{
  const n = Number(process.env.BENCH_RECEIPTS ?? 100_000);
  const log = new MerkleLog();
  log.appendFrom(
    0,
    Array.from({ length: n }, (_, i) => `{"receipt":${i}}`),
  );
  log.root();
  const sizes = Array.from({ length: 1000 }, (_, i) => ((i * 7919) % (n - 1)) + 1);
  const time = (f: (m: number) => unknown[]) => {
    const started = performance.now();
    let nodes = 0;
    for (const m of sizes) nodes += f(m).length;
    return { us: ((performance.now() - started) * 1000) / sizes.length, nodes: nodes / sizes.length };
  };
  const inclusion = time((m) => log.inclusion(m - 1));
  const consistency = time((m) => log.consistency(m));
  // The reference (RFC 9162's recursion over the leaves) rehashes every leaf: one call is enough.
  const leafHashes = Array.from({ length: n }, (_, i) => Buffer.from(String(i).padStart(32, '0')));
  const started = performance.now();
  consistencyProof(n >> 1, leafHashes);
  const reference = performance.now() - started;
  console.log(
    `proofs at ${n} receipts: inclusion ${inclusion.us.toFixed(1)} µs (${inclusion.nodes.toFixed(1)} nodes), ` +
      `consistency ${consistency.us.toFixed(1)} µs (${consistency.nodes.toFixed(1)} nodes), mean of ${sizes.length}; ` +
      `without the cached subtrees one consistency proof took ${reference.toFixed(0)} ms`,
  );
}

const server = await startChild(['api/main.ts'], { DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0', LOG_LEVEL: 'warn' });
try {
  const r = await compare(
    'POST /api/omip/score vs GET /api/convert',
    ROUNDS,
    () =>
      load(`${server.url}/api/omip/score`, {
        seconds: SECONDS,
        method: 'POST',
        headers: json,
        body: JSON.stringify({ entity_id: 'sovereign-a', plan }),
        pid: server.child.pid,
      }),
    () => load(`${server.url}/api/convert`, { seconds: SECONDS, pid: server.child.pid }),
  );
  console.log(`target ratio >= 0.6: ${r.ratio >= 0.6 ? 'met' : 'NOT met'}`);
  const dual = await load(`${server.url}/api/omip/dual-exchange`, {
    seconds: SECONDS,
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      agents: [
        { id: 'sovereign-a', proposal: { plan } },
        { id: 'sovereign-b', proposal: { plan } },
      ],
    }),
  });
  console.log(`POST /api/omip/dual-exchange: ${dual.rps.toFixed(0)} req/s (p99 ${dual.p99} ms)`);
} finally {
  server.child.kill('SIGTERM');
}
