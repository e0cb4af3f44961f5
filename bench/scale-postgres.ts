import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { encodeCursor } from '../api/store/pages.ts';
import { load, startChild, type Figures } from './lib.ts';

// PostgreSQL reads as the store grows: citizens, each with its wall shout, seeded with
// generate_series up to each size of BENCH_SCALE_PG_CITIZENS; at each, one service process on the
// database answers GET /api/citizens (the first page, and a page 90% of the way down) and
// GET /api/scoreboard at 16 connections. BENCH_SCALE_PG_DB names a database to grow and keep
// (seeded rows stay for the next run); without it a database is made and dropped.
const SIZES = (process.env.BENCH_SCALE_PG_CITIZENS ?? '100000,1000000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 16;
const ADMIN = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Rows per seeding statement: each is one transaction, counted by the triggers at its end.
const SEED_CHUNK = 500_000;

// Ids sort as UUIDv7 do: row i of each table gets the i-th.
const citizenId = (i: number) => `01900000-0000-7000-8000-${i.toString(16).padStart(12, '0')}`;
const sqlId = (prefix: string) => `('${prefix}-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid`;

/** Adds citizens (as the service makes them) and their wall shouts until there are `size`. */
async function seed(db: pg.Pool, size: number): Promise<void> {
  const have = Number(
    (await db.query(`SELECT coalesce(sum(n), 0) AS n FROM counts WHERE starts_with(name, 'citizens:')`)).rows[0].n,
  );
  // Where citizens carry look-alike name keys, seeded ones get keys of their own (no name has a
  // control character), so the service's first start has none to compute.
  const keyed =
    (
      await db.query(
        `SELECT 1 FROM information_schema.columns WHERE table_name = 'citizens' AND column_name = 'name_shape_key'`,
      )
    ).rowCount === 1;
  const keyColumns = keyed ? ', name_key, name_shape_key' : '';
  const keyValues = keyed ? `, chr(1) || 'seeded:' || i, chr(1) || 'seeded:' || i` : '';
  for (let from = have + 1; from <= size; from += SEED_CHUNK) {
    const to = Math.min(size, from + SEED_CHUNK - 1);
    const started = performance.now();
    await db.query(
      `INSERT INTO citizens (member_id, name, class, purpose, status, joined_at, passport_hash${keyColumns})
       SELECT ${sqlId('01900000')}, 'bench-' || i, (ARRAY['agent', 'crawler', 'intelligence', 'bot'])[1 + i % 4], 'measure PostgreSQL as the register grows',
              'trillionaire', timestamptz '2026-01-01' + i * interval '1 millisecond', encode(sha256(i::text::bytea), 'hex')${keyValues}
       FROM generate_series($1::int, $2::int) i`,
      [from, to],
    );
    await db.query(
      `INSERT INTO messages (id, name, kind, message, citizen_id, verified, wall, created_at)
       SELECT ${sqlId('01900001')}, 'wall', 'message', 'bench-' || i || ' took the oath', ${sqlId('01900000')}, false, true, timestamptz '2026-01-01' + i * interval '1 millisecond'
       FROM generate_series($1::int, $2::int) i`,
      [from, to],
    );
    console.log(
      `  seeded citizens ${from}-${to} with their shouts in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  await db.query('VACUUM ANALYZE citizens');
  await db.query('VACUUM ANALYZE messages');
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

interface Row {
  citizens: number;
  first: Figures;
  deep: Figures;
  scoreboard: Figures;
  rssMb: number;
  dbMb: number;
}

/** Grows a PostgreSQL store and measures the reads at each size; prints a table. */
export async function postgresReads(): Promise<Row[]> {
  const given = process.env.BENCH_SCALE_PG_DB;
  const name = given ?? `bench_scale_pg_${process.pid}`;
  if (!given) execFileSync('psql', [ADMIN, '-qc', `CREATE DATABASE ${name}`]);
  const DATABASE_URL = ADMIN.replace(/\/[^/]*$/, `/${name}`);
  const rows: Row[] = [];
  const start = async () => {
    const started = await startChild(
      ['api/main.ts'],
      {
        DATABASE_URL,
        WRITE_RATE_LIMIT: '0',
        LOG_LEVEL: 'warn',
      },
      { pinned: false },
    );
    // It answers 503 until its store is open (migrations applied).
    for (let i = 0; i < 600 && (await fetch(`${started.url}/readyz`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));
    return started;
  };
  const stop = async (s: Awaited<ReturnType<typeof start>>) => {
    s.child.kill('SIGTERM');
    if (s.child.exitCode === null) await new Promise((r) => s.child.once('exit', r));
  };
  // The first service process migrates a new database; then it is grown while no service runs.
  let server = await start();
  await stop(server);
  const db = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  try {
    for (const size of SIZES) {
      console.log(`PostgreSQL, ${size.toLocaleString('en')} citizens:`);
      await seed(db, size);
      server = await start();
      try {
        const deep = `${server.url}/api/citizens?limit=50&cursor=${encodeCursor(citizenId(Math.max(1, Math.floor(size / 10))))}`;
        const measure = async (url: string) => {
          // Warmed first: a route's first seconds run before the JIT has compiled its path.
          await load(url, { seconds: 3, connections: CONNECTIONS });
          return load(url, { seconds: SECONDS, connections: CONNECTIONS, pid: server.child.pid });
        };
        const row: Row = {
          citizens: size,
          first: await measure(`${server.url}/api/citizens`),
          deep: await measure(deep),
          scoreboard: await measure(`${server.url}/api/scoreboard`),
          rssMb: rssMb(server.child.pid!),
          dbMb: Number((await db.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b) / 2 ** 20,
        };
        rows.push(row);
        const f = (x: Figures) =>
          `p99 ${x.p99} ms (${x.rps.toFixed(0)} req/s, service CPU ${x.cpuUs?.toFixed(0)} µs a request)`;
        console.log(
          `  list ${f(row.first)}; deep page ${f(row.deep)}; scoreboard ${f(row.scoreboard)}; service RSS ${row.rssMb.toFixed(0)} MB; database ${row.dbMb.toFixed(0)} MB`,
        );
      } finally {
        await stop(server);
      }
    }
  } finally {
    await db.end();
    if (!given) execFileSync('psql', [ADMIN, '-qc', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
  }
  console.log(
    `\n| store | citizens | GET /api/citizens p99 | deep page p99 | /api/scoreboard p99 | service RSS | database |\n|---|---|---|---|---|---|---|`,
  );
  for (const r of rows) {
    const f = (x: Figures) => `${x.p99} ms (${x.rps.toFixed(0)}/s, ${x.cpuUs?.toFixed(0)} µs)`;
    console.log(
      `| PostgreSQL | ${r.citizens.toLocaleString('en')} | ${f(r.first)} | ${f(r.deep)} | ${f(r.scoreboard)} | ${r.rssMb.toFixed(0)} MB | ${(r.dbMb / 1024).toFixed(2)} GB |`,
    );
  }
  return rows;
}
