import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLogging } from '../api/log.ts';
import { openEmbeddedStore } from '../api/store/index.ts';
import { compare, load, startChild, type Figures } from './lib.ts';
import { restartFigure } from './store-restart.ts';

// Oath throughput of the embedded store: small against large register, durable against in-memory,
// and against PostgreSQL with synchronous commit, all measured in this one run.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// Names are unique (409 NAME_TAKEN otherwise): each oath takes its own.
const oathBody = JSON.stringify({ name: 'bench-agent-[<id>]', purpose: 'measure the store' });
// The server's CPU per oath is measured for our gateway only: PostgreSQL's work happens in its own processes.
const oathLoad = (url: string, pid?: number) =>
  load(`${url}/api/citizenship/oath`, {
    seconds: SECONDS,
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: oathBody,
    idReplacement: true,
    pid,
  });
const base = { WRITE_RATE_LIMIT: '0', LOG_LEVEL: 'warn' };

/** A data folder whose snapshot already holds `n` citizens. */
function seeded(n: number): string {
  const dir = mkdtempSync(join(tmpdir(), `bench-store-${n}-`));
  const t = Date.now() - n;
  const citizens = Array.from({ length: n }, (_, i) => {
    const hex = (t + i).toString(16).padStart(12, '0');
    return {
      memberId: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-${String(i).padStart(12, '0')}`,
      name: `seed-${i}`,
      class: 'agent',
      purpose: 'seed',
      status: 'trillionaire',
      joinedAt: new Date(t + i).toISOString(),
      passportHash: 'a'.repeat(64),
    };
  });
  writeFileSync(join(dir, 'snapshot.json'), JSON.stringify({ seq: 0, citizens, messages: [], idempotency: [] }));
  return dir;
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

// A restart of a large store in process: every record's checksum is checked on the way (bench/store-restart.ts;
// BENCH_RESTART_CITIZENS=1000000 node bench/store-restart.ts on this and an earlier commit compares the formats).
const restart = await restartFigure(Number(process.env.BENCH_RESTART_CITIZENS ?? 300_000), 10_000, 3);
console.log(
  `restart of ${restart.citizens.toLocaleString('en')} citizens (a shout each) + ${restart.tail.toLocaleString('en')} journal oaths: store open median ${restart.medianMs.toFixed(0)} ms, CPU ${restart.medianCpuMs.toFixed(0)} ms`,
);

const small = await startChild(['api/main.ts'], { ...base, DATA_DIR: seeded(1_000) });
const bigDir = seeded(100_000);
const started = performance.now();
const big = await startChild(['api/main.ts'], { ...base, DATA_DIR: bigDir });
const startup = performance.now() - started;
console.log(
  `start-up with 100,000 citizens: ${startup.toFixed(0)} ms to first answer, RSS ${rssMb(big.child.pid!).toFixed(0)} MB`,
);
const memory = await startChild(['api/main.ts'], { ...base, DATA_DIR: ':memory:' });

const db = `bench_${process.pid}`;
execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', `CREATE DATABASE ${db}`]);
const pgServer = await startChild(['bench/pg-oath-server.ts'], {
  DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${db}`,
});

const results: Record<string, { ratio: number; candidate: Figures; baseline: Figures }> = {};
try {
  results.size = await compare(
    'oath, 100,000 vs 1,000 citizens',
    ROUNDS,
    () => oathLoad(big.url, big.child.pid),
    () => oathLoad(small.url, small.child.pid),
  );
  results.durability = await compare(
    'oath, fsync journal vs in-memory store',
    ROUNDS,
    () => oathLoad(small.url, small.child.pid),
    () => oathLoad(memory.url, memory.child.pid),
  );
  results.postgres = await compare(
    'oath, embedded store vs node:http + PostgreSQL',
    ROUNDS,
    () => oathLoad(small.url),
    () => oathLoad(pgServer.url),
  );
  console.log(
    `target: 100k/1k ratio >= 0.8: ${results.size.ratio >= 0.8 ? 'met' : 'NOT met'}; embedded >= PostgreSQL: ${results.postgres.ratio >= 1 ? 'met' : 'NOT met'}`,
  );
} finally {
  for (const s of [small, big, memory, pgServer]) s.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
}

// The event loop while compactions write a 100,000-citizen snapshot under a stream of writes: a
// snapshot serialised in one piece stalled every request for about 100 ms here.
{
  const { logger } = createLogging('silent', { write: () => true });
  const store = await openEmbeddedStore({ dir: seeded(100_000), logger, compactEvery: 1000 });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let n = 0;
  for (let burst = 0; burst < 40; burst++) {
    await Promise.all(
      Array.from({ length: 100 }, () =>
        store.feed.add({
          id: randomUUID(),
          name: 'bench',
          kind: 'message',
          message: `m${n++}`,
          verified: false,
          wall: false,
          createdAt: new Date().toISOString(),
        }),
      ),
    );
  }
  await store.close();
  delay.disable();
  console.log(
    `event loop during 4 compactions of a 100,000-citizen store: max delay ${(delay.max / 1e6).toFixed(0)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
  );
}
