import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, startChild, type Figures } from './lib.ts';
import { embeddedGrowth } from './scale-embedded.ts';
import { postgresReads } from './scale-postgres.ts';

// BENCH_SCALE picks the parts (comma-separated; all by default): `embedded` grows the embedded
// store, `postgres` grows a PostgreSQL store and measures its reads, `processes`
// compares one and two gateway processes.
const PARTS = new Set((process.env.BENCH_SCALE ?? 'embedded,postgres,processes').split(','));
if (PARTS.has('embedded')) await embeddedGrowth();
if (PARTS.has('postgres')) await postgresReads();
if (!PARTS.has('processes')) process.exit(0);

// Oath throughput: one and two gateway processes on PostgreSQL, and one on the embedded store,
// all in this run. Two processes are loaded at once and their req/s added.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
// Names are unique (409 NAME_TAKEN otherwise): each oath takes its own.
const body = JSON.stringify({ name: 'scale-agent-[<id>]', purpose: 'measure scale-out' });
const oath = (url: string) =>
  load(`${url}/api/citizenship/oath`, {
    seconds: SECONDS,
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body,
    idReplacement: true,
  });
const base = { WRITE_RATE_LIMIT: '0', LOG_LEVEL: 'warn' };
const show = (name: string, f: Figures) => console.log(`${name}: ${f.rps.toFixed(0)} req/s (p99 ${f.p99} ms)`);

const db = `bench_scale_${process.pid}`;
execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', `CREATE DATABASE ${db}`]);
const DATABASE_URL = `postgres://postgres@127.0.0.1:5432/${db}`;
const embedded = await startChild(
  ['api/main.ts'],
  { ...base, DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-scale-')) },
  { pinned: false },
);
const p1 = await startChild(['api/main.ts'], { ...base, DATABASE_URL }, { pinned: false });
const p2 = await startChild(['api/main.ts'], { ...base, DATABASE_URL }, { pinned: false });
try {
  const emb = await oath(embedded.url);
  const one = await oath(p1.url);
  const [x, y] = await Promise.all([oath(p1.url), oath(p2.url)]);
  show('embedded store, 1 process', emb);
  show('PostgreSQL, 1 process', one);
  show('PostgreSQL, 2 processes', { rps: x.rps + y.rps, p99: Math.max(x.p99, y.p99) });
  console.log(
    `2 processes / 1 process on PostgreSQL: ${((x.rps + y.rps) / one.rps).toFixed(2)}; embedded / PostgreSQL 1 process: ${(emb.rps / one.rps).toFixed(2)}`,
  );
} finally {
  for (const s of [embedded, p1, p2]) s.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
}
