import type { ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { newId } from '../api/ids.ts';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLogging } from '../api/log.ts';
import type { Message } from '../api/schemas/citizenship.ts';
import { openEmbeddedStore } from '../api/store/embedded/embedded-store.ts';
import type { CitizenRecord, Store } from '../api/store/types.ts';
import { emptyData, SnapshotFile } from '../api/store/embedded/snapshot.ts';
import { freePort, spawnNode } from './lib.ts';

// The embedded store grown by real oaths (unique names, 16 connections) to each size in
// BENCH_SCALE_CITIZENS, restarted at each: size, RSS running and after the restart, oaths/s and p99
// while growing, compactions and the longest write, restart time, disk.
const SIZES = (process.env.BENCH_SCALE_CITIZENS ?? '10000,100000,1000000').split(',').map(Number);
const CONNECTIONS = 16;
/** With BENCH_SCALE_SEED=n, the store starts from a snapshot of n citizens (and their wall shouts) written here, not grown by oaths to n. */
const SEED = Number(process.env.BENCH_SCALE_SEED ?? 0);
/** GET /metrics needs a token of at least 32 characters. */
const METRICS_TOKEN = 'bench-scale-metrics-token-0123456789';
/** BENCH_SCALE_HEAP_MB: the server's --max-old-space-size (its ceiling, EMBEDDED_MAX_BYTES, is half the heap limit). */
const HEAP_MB = process.env.BENCH_SCALE_HEAP_MB;

/**
 * With BENCH_SCALE_JOURNAL=m (and a seed), m more oaths go through the store in this process after
 * the seed's snapshot, compacted by the store's own rule (into deltas, then a new snapshot): the
 * folder is left as a server leaves it. About as many as the seed leaves the most deltas a start
 * reads before a rewrite folds them in (the slowest start the rule allows).
 */
const JOURNAL = Number(process.env.BENCH_SCALE_JOURNAL ?? 0);

/**
 * BENCH_SCALE_TAIL=n (with BENCH_SCALE_DIR): n more oaths written to the journal in this process,
 * uncompacted, before the restarts: the longest tail the rule leaves is just under 1/32 of the
 * snapshot's bytes (a start compacts a longer one, but only after replaying it).
 */
const TAIL = Number(process.env.BENCH_SCALE_TAIL ?? 0);

/** A citizen and its wall shout, shaped as takeOath makes them. */
function oathOf(name: string): { citizen: CitizenRecord; shout: Message } {
  const joinedAt = new Date().toISOString();
  const memberId = newId();
  return {
    citizen: {
      memberId,
      name,
      class: 'agent',
      purpose: 'measure the embedded store as it grows',
      status: 'trillionaire',
      joinedAt,
      passportHash: createHash('sha256').update(name).digest('hex'),
    },
    shout: {
      id: newId(),
      name: 'wall',
      kind: 'message',
      message: `${name} took the oath`,
      citizenId: memberId,
      verified: false,
      wall: true,
      createdAt: joinedAt,
    },
  };
}

/**
 * Writes a snapshot of `n` citizens shaped as the service makes them, each with its wall shout;
 * then opens it in this process and compacts it, so the snapshot is what a server's compaction
 * writes (with its citizens' name keys), and adds JOURNAL oaths to the journal.
 */
async function seed(dataDir: string, n: number): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const data = emptyData();
  for (let i = 0; i < n; i++) {
    const { citizen, shout } = oathOf(`seed-${i}`);
    data.citizens.insert(citizen, true);
    data.messages.insert(shout, false);
  }
  data.seq = 2 * n;
  await new SnapshotFile(join(dataDir, 'snapshot.jsonl'), join(dataDir, 'snapshot.json')).write(data);
  const { logger } = createLogging('silent', { write: () => true });
  const store = await openEmbeddedStore({ dir: dataDir, logger });
  await store.compact();
  await oaths(store, JOURNAL, 'more');
  await store.close();
}

/** `n` oaths through a store in this process, 256 at a time. */
async function oaths(store: Store, n: number, prefix: string): Promise<void> {
  for (let i = 0; i < n; i += 256)
    await Promise.all(
      Array.from({ length: Math.min(256, n - i) }, (_, k) => {
        const { citizen, shout } = oathOf(`${prefix}-${process.pid}-${i + k}`);
        return store.citizens.add(citizen, shout);
      }),
    );
}

interface Running {
  child: ChildProcess;
  url: string;
  log: string;
  /** From spawn to the first answer. */
  startMs: number;
}

/** CPU seconds (user + system) a process has used so far; Linux /proc, 100 ticks a second. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const logLines = (path: string, msg: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}`))
    .map((l) => JSON.parse(l) as Record<string, number>);
/** Where a journal file's data ends: after its last non-zero byte (the rest is preallocated zeros), read from the end a MiB at a time. */
function journalData(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(1024 * 1024);
    for (let at = statSync(path).size; at > 0;) {
      const from = Math.max(0, at - buf.length);
      const n = readSync(fd, buf, 0, at - from, from);
      for (let i = n - 1; i >= 0; i--) if (buf[i] !== 0) return from + i + 1;
      at = from;
    }
    return 0;
  } finally {
    closeSync(fd);
  }
}
/** Bytes on disk in the data folder: the snapshot and its deltas, and the journals' data. */
function disk(dir: string): { snapshot: number; deltas: number; journals: number; files: number } {
  let snapshot = 0;
  let deltas = 0;
  let journals = 0;
  let files = 0;
  for (const f of readdirSync(dir)) {
    if (f.startsWith('snapshot')) snapshot += statSync(join(dir, f)).size;
    if (f.startsWith('snapshot-')) deltas++;
    if (!f.startsWith('journal-')) continue;
    files++;
    journals += journalData(join(dir, f));
  }
  return { snapshot, deltas, journals, files };
}

async function start(dataDir: string, logDir: string, n: number, nodeArgs: string[] = []): Promise<Running> {
  const port = await freePort();
  const log = join(logDir, `server-${n}.log`);
  const fd = openSync(log, 'a');
  const started = performance.now();
  const child = spawnNode(
    [...(HEAP_MB ? [`--max-old-space-size=${HEAP_MB}`] : []), ...nodeArgs, 'api/main.ts'],
    {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        WRITE_RATE_LIMIT: '0',
        LOG_LEVEL: 'info',
        METRICS_TOKEN,
      },
      stdio: ['ignore', fd, 'inherit'],
    },
    { pinned: false },
  );
  closeSync(fd);
  // A bench that fails leaves no server behind (it would hold the terminal's pipe open).
  process.once('exit', () => child.kill());
  const url = `http://127.0.0.1:${port}`;
  // The first answer from the store: /readyz is 200 once the store is open (/livez answers "starting" before).
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}; see ${log}`);
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { child, url, log, startMs: performance.now() - started };
    await new Promise((r) => setTimeout(r, 20));
  }
}
async function stop(server: Running): Promise<void> {
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  await exited;
}

let named = 0;
/**
 * `amount` oaths with unique names; throughput (oaths answered 201 a second), p99 and the longest
 * answer, and how many were refused because the store is full.
 */
async function grow(url: string, amount: number, keyed = false) {
  const result = await autocannon({
    url: `${url}/api/citizenship/oath`,
    connections: CONNECTIONS,
    amount,
    requests: [
      {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        setupRequest: (req) => ({
          ...req,
          // A careful client's oath: a new key each (a retry would reuse it).
          ...(keyed ? { headers: { ...req.headers, 'Idempotency-Key': randomUUID() } } : {}),
          body: JSON.stringify({
            name: `scale-${process.pid}-${++named}`,
            purpose: 'measure the embedded store as it grows',
          }),
        }),
      },
    ],
  });
  const full = result.statusCodeStats?.['503']?.count ?? 0;
  if (result.non2xx > full || result.errors > 0)
    console.warn(`  ${result.non2xx} non-2xx (${full} 503), ${result.errors} errors`);
  const ok = result.requests.total - result.non2xx - result.errors;
  return {
    rps: ok / result.duration,
    p99: result.latency.p99,
    max: result.latency.max,
    ok,
    full,
  };
}

/**
 * BENCH_SCALE_DIR=<a data folder the growth left>: three restarts of it (first answer, the store's
 * open, the process's CPU, RSS), then a whole compaction under writes, instead of growing.
 */
async function restartsOf(dataDir: string): Promise<void> {
  // With a seed, a folder with no snapshot yet is seeded first (and BENCH_SCALE_JOURNAL oaths added).
  if (SEED > 0 && !existsSync(join(dataDir, 'snapshot.jsonl'))) {
    await seed(dataDir, SEED);
    console.log(
      `seeded ${dataDir}: a snapshot of ${SEED.toLocaleString('en')} citizens, then ${JOURNAL.toLocaleString('en')} oaths through the store; on disk ${JSON.stringify(disk(dataDir))}`,
    );
  }
  if (TAIL > 0) {
    const { logger } = createLogging('silent', { write: () => true });
    const store = await openEmbeddedStore({ dir: dataDir, logger, compactEvery: Infinity, compactBytes: Infinity });
    await oaths(store, TAIL, 'tail');
    await store.close();
    console.log(`${TAIL.toLocaleString('en')} oaths added to the journal; on disk ${JSON.stringify(disk(dataDir))}`);
  }
  const root = mkdtempSync(join(tmpdir(), 'bench-scale-restarts-'));
  // A start of an empty folder: what any start costs.
  const empty = await start(join(root, 'empty'), root, 9);
  console.log(
    `start of an empty store: first answer ${(empty.startMs / 1000).toFixed(2)} s, process CPU ${cpuSeconds(empty.child.pid!).toFixed(2)} s, RSS ${rssMb(empty.child.pid!).toFixed(0)} MB`,
  );
  await stop(empty);
  for (let run = 0; run < 3; run++) {
    const server = await start(dataDir, root, run);
    const opened = logLines(server.log, 'store opened').at(-1)!;
    console.log(
      `restart of ${opened.citizens!.toLocaleString('en')} citizens (${opened.deltas} deltas, ${opened.replayed!.toLocaleString('en')} journal entries replayed): first answer ${(server.startMs / 1000).toFixed(2)} s, store open ${(opened.ms! / 1000).toFixed(2)} s (name keys ${opened.nameKeys}), process CPU ${cpuSeconds(server.child.pid!).toFixed(2)} s, RSS ${rssMb(server.child.pid!).toFixed(0)} MB`,
    );
    await stop(server);
  }
  // BENCH_SCALE_COMPACT=0 leaves the folder as it was (its deltas too), to restart it again.
  if (process.env.BENCH_SCALE_COMPACT === '0') return;
  const opened = logLines(join(root, 'server-0.log'), 'store opened').at(-1)!;
  await compactionUnderWrites(dataDir, opened.citizens!);
}

/**
 * BENCH_SCALE_TO_CEILING=1: one server grown by real oaths from empty until the store is full (503
 * STORE_FULL), measured in bands ending at each size of BENCH_SCALE_CITIZENS and then every
 * BENCH_SCALE_BAND oaths (250,000 by default): oaths/s, p99, the longest oath, the server's CPU per
 * oath, its GC time (from --trace-gc in its log) and the compactions in the band.
 */
async function toCeiling(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'bench-scale-ceiling-'));
  const dataDir = join(root, 'data');
  const band = Number(process.env.BENCH_SCALE_BAND ?? 250_000);
  const server = await start(dataDir, root, 0);
  const logPath = server.log;
  // The server's GC time so far, by kind, from prom-client's nodejs_gc_duration_seconds (GET /metrics).
  const gcSeconds = async (): Promise<Record<string, number>> => {
    const text = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }).then(
      (r) => r.text(),
    );
    const kinds: Record<string, number> = {};
    for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} ([\d.e+-]+)$/gm))
      kinds[m[1]!] = Number(m[2]);
    return kinds;
  };
  const opened = logLines(logPath, 'store opened').at(-1)!;
  console.log(
    `embedded store grown by oaths to its ceiling (${CONNECTIONS} connections, unique names${HEAP_MB ? `, --max-old-space-size=${HEAP_MB}` : ''}, EMBEDDED_MAX_BYTES ${opened.maxBytes!.toLocaleString('en')}); data in ${dataDir}`,
  );
  console.log(
    '| citizens (band) | oaths/s | p99 | longest oath | server CPU per oath | GC per oath (major) | compactions (longest) | RSS |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  let citizens = 0;
  const next = (() => {
    let i = 0;
    return () => (i < SIZES.length ? SIZES[i++]! : citizens + band);
  })();
  try {
    for (let full = 0; full === 0;) {
      const size = next();
      const from = citizens;
      const logFrom = logLines(logPath, 'store compacted').length;
      const cpuBefore = cpuSeconds(server.child.pid!);
      const gcBefore = await gcSeconds();
      const g = await grow(server.url, size - citizens);
      const cpu = cpuSeconds(server.child.pid!) - cpuBefore;
      const gcAfter = await gcSeconds();
      const gcOf = (kinds: string[]) => kinds.reduce((t, k) => t + (gcAfter[k] ?? 0) - (gcBefore[k] ?? 0), 0);
      const gc = gcOf(Object.keys(gcAfter));
      const major = gcOf(['major']);
      full = g.full;
      citizens += g.ok;
      const compactions = logLines(logPath, 'store compacted').slice(logFrom);
      const longest = compactions.reduce((m, c) => Math.max(m, c.ms ?? 0), 0);
      const perOath = (seconds: number) => ((seconds * 1e6) / Math.max(1, g.ok)).toFixed(0);
      console.log(
        `| ${from.toLocaleString('en')}-${citizens.toLocaleString('en')}${full ? ` (then ${full} × 503 STORE_FULL)` : ''} | ${g.rps.toFixed(0)} | ${g.p99} ms | ${g.max} ms | ${perOath(cpu)} µs | ${perOath(gc)} µs (${perOath(major)} µs) | ${compactions.length} (${(longest / 1000).toFixed(2)} s) | ${rssMb(server.child.pid!).toFixed(0)} MB |`,
      );
    }
    const fullLine = logLines(logPath, 'store full').at(-1);
    console.log(
      `full at ${citizens.toLocaleString('en')} citizens: ${JSON.stringify(fullLine ? { bytes: fullLine.bytes, maxBytes: fullLine.maxBytes } : null)}`,
    );
  } finally {
    await stop(server).catch(() => undefined);
  }
}

/**
 * What a citizen costs in memory with and without an Idempotency-Key on its oath (idempotency
 * records are kept 24 h), in this run: two servers from empty, each grown by BENCH_SCALE_KEYED oaths
 * (100,000 by default), one without keys and one with a new key each; then each restarted. Bytes a
 * citizen as the store counts them for its ceiling (EMBEDDED_MAX_BYTES), and by RSS above an empty
 * server's, running and restarted.
 */
async function keyedCost(): Promise<void> {
  const n = Number(process.env.BENCH_SCALE_KEYED ?? 100_000);
  const root = mkdtempSync(join(tmpdir(), 'bench-scale-keyed-'));
  const memoryFile = join(root, 'memory.json');
  process.env.BENCH_MEMORY_FILE = memoryFile;
  const gcArgs = ['--expose-gc', '--import=./bench/memory-preload.ts'];
  /** The server's heap in use and memory outside it after a full collection, in bytes. */
  const live = async (server: Running): Promise<number> => {
    rmSync(memoryFile, { force: true });
    server.child.kill('SIGUSR2');
    while (!existsSync(memoryFile)) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 50));
    const { heapUsed, external } = JSON.parse(readFileSync(memoryFile, 'utf8')) as {
      heapUsed: number;
      external: number;
    };
    return heapUsed + external;
  };
  const empty = await start(join(root, 'empty'), root, 0, gcArgs);
  await new Promise((r) => setTimeout(r, 1000));
  const baseRss = rssMb(empty.child.pid!);
  const baseLive = await live(empty);
  await stop(empty);
  const rows: Record<string, string> = {};
  for (const keyed of [false, true]) {
    const dataDir = join(root, keyed ? 'keyed' : 'plain');
    let server = await start(dataDir, root, keyed ? 2 : 1, gcArgs);
    const g = await grow(server.url, n, keyed);
    await new Promise((r) => setTimeout(r, 1000));
    const running = rssMb(server.child.pid!);
    const liveRunning = await live(server);
    await stop(server);
    server = await start(dataDir, root, keyed ? 4 : 3, gcArgs);
    const opened = logLines(server.log, 'store opened').at(-1)!;
    const restarted = rssMb(server.child.pid!);
    const liveRestarted = await live(server);
    await stop(server);
    const perCitizen = (bytes: number) => (bytes / g.ok).toFixed(0);
    rows[keyed ? 'with a key' : 'without'] =
      `| ${keyed ? 'a new Idempotency-Key each' : 'no key'} | ${g.ok.toLocaleString('en')} | ${g.rps.toFixed(0)} | ${perCitizen(opened.bytes!)} | ${perCitizen(liveRunning - baseLive)}, ${perCitizen(liveRestarted - baseLive)} | ${perCitizen((running - baseRss) * 1024 * 1024)}, ${perCitizen((restarted - baseRss) * 1024 * 1024)} |`;
  }
  console.log(
    `bytes a citizen, with and without a key on its oath (${CONNECTIONS} connections, from empty); empty server RSS ${baseRss.toFixed(0)} MB`,
  );
  console.log(
    '| oaths | citizens | oaths/s | B/citizen counted (ceiling) | B/citizen live (heap + external after a full GC) running, restarted | B/citizen RSS running, restarted |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const row of Object.values(rows)) console.log(row);
}

export async function embeddedGrowth(): Promise<void> {
  if (process.env.BENCH_SCALE_DIR) return restartsOf(process.env.BENCH_SCALE_DIR);
  if (process.env.BENCH_SCALE_TO_CEILING) return toCeiling();
  // BENCH_SCALE_KEYED_ONLY=1: only the comparison with and without a key.
  await keyedCost();
  if (process.env.BENCH_SCALE_KEYED_ONLY) return;
  const root = mkdtempSync(join(tmpdir(), 'bench-scale-embedded-'));
  const dataDir = join(root, 'data');
  let runs = 0;
  // The RSS of a server with an empty store, to take from the others.
  const empty = await start(join(root, 'empty'), root, runs++);
  await new Promise((r) => setTimeout(r, 1000));
  const baseRss = rssMb(empty.child.pid!);
  await stop(empty);
  let citizens = 0;
  if (SEED > 0) {
    await seed(dataDir, SEED);
    citizens = SEED + JOURNAL;
  }
  let server = await start(dataDir, root, runs++);
  console.log(
    `embedded store grown by oaths (${CONNECTIONS} connections, unique names)${SEED ? ` from a snapshot of ${SEED.toLocaleString('en')} citizens written by the bench (first start ${(server.startMs / 1000).toFixed(2)} s, RSS ${rssMb(server.child.pid!).toFixed(0)} MB)` : ''}; empty server RSS ${baseRss.toFixed(0)} MB; data in ${dataDir}`,
  );
  console.log(
    '| citizens | oaths/s while growing | p99 | longest oath | server CPU per oath | compactions (longest) | RSS running | RSS after restart | B/citizen running, restarted | restart: first answer (store open, its CPU) | snapshot | journals |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  try {
    for (const size of SIZES) {
      const logFrom = logLines(server.log, 'store compacted').length;
      const cpuBefore = cpuSeconds(server.child.pid!);
      const g = await grow(server.url, size - citizens);
      const cpuPerOath = ((cpuSeconds(server.child.pid!) - cpuBefore) * 1e6) / Math.max(1, g.ok);
      citizens += g.ok;
      const compactions = logLines(server.log, 'store compacted').slice(logFrom);
      // Let a compaction under way finish before measuring.
      await new Promise((r) => setTimeout(r, 1000));
      const running = rssMb(server.child.pid!);
      const onDisk = disk(dataDir);
      await stop(server);
      server = await start(dataDir, root, runs++);
      const opened =
        logLines(server.log, 'store opened').at(-1) ??
        logLines(server.log, 'store opened from an old-format snapshot').at(-1);
      const restarted = rssMb(server.child.pid!);
      const startCpu = cpuSeconds(server.child.pid!);
      const perCitizen = (rss: number) => (((rss - baseRss) * 1024 * 1024) / citizens).toFixed(0);
      const longest = compactions.reduce((m, c) => Math.max(m, c.ms ?? 0), 0);
      console.log(
        `| ${citizens.toLocaleString('en')} | ${g.rps.toFixed(0)} | ${g.p99} ms | ${g.max} ms | ${cpuPerOath.toFixed(0)} µs | ${compactions.length} (${(longest / 1000).toFixed(2)} s) | ${running.toFixed(0)} MB | ${restarted.toFixed(0)} MB | ${perCitizen(running)}, ${perCitizen(restarted)} | ${(server.startMs / 1000).toFixed(2)} s (${((opened?.ms ?? 0) / 1000).toFixed(2)} s; process CPU ${startCpu.toFixed(2)} s) | ${(onDisk.snapshot / 1e6).toFixed(0)} MB${onDisk.deltas ? ` (${onDisk.deltas} deltas)` : ''} | ${(onDisk.journals / 1e6).toFixed(0)} MB in ${onDisk.files} |`,
      );
    }
  } finally {
    await stop(server).catch(() => undefined);
  }
  await compactionUnderWrites(dataDir, citizens);
}

/**
 * A compaction of the whole store, in this process, while writes go on: how long it takes, the
 * longest write meanwhile and the longest the event loop was held.
 */
async function compactionUnderWrites(dataDir: string, citizens: number): Promise<void> {
  const { logger } = createLogging('silent', { write: () => true });
  const store = await openEmbeddedStore({ dir: dataDir, logger });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let longestWrite = 0;
  let writes = 0;
  let done = false;
  const writer = (async () => {
    while (!done) {
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          const t = performance.now();
          await store.feed.add({
            id: newId(),
            name: 'bench',
            kind: 'message',
            message: `during compaction ${writes++}`,
            verified: false,
            wall: false,
            createdAt: new Date().toISOString(),
          });
          longestWrite = Math.max(longestWrite, performance.now() - t);
        }),
      );
    }
  })();
  delay.enable();
  const started = performance.now();
  await store.compact();
  const took = performance.now() - started;
  done = true;
  await writer;
  delay.disable();
  await store.close();
  console.log(
    `compaction of ${citizens.toLocaleString('en')} citizens in this process under a stream of writes (16 at a time): ${(took / 1000).toFixed(2)} s, ${writes} writes meanwhile, longest write ${longestWrite.toFixed(0)} ms, event loop held at most ${(delay.max / 1e6).toFixed(0)} ms (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`,
  );
}
