import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogging } from '../api/log.ts';
import { openEmbeddedStore } from '../api/store/index.ts';
import { emptyData, SnapshotFile } from '../api/store/embedded/snapshot.ts';
import { median } from './lib.ts';

// What a restart of a large embedded store costs, in process: a snapshot of `citizens` citizens and
// a shout each, plus a journal tail of `tail` oaths, opened `rounds` times (median of the store's
// open). The same file runs unchanged on an earlier commit of the store, so a change of the on-disk
// format (the checksums on every record) is measured before and after in the same way.
const { logger } = createLogging(
  process.env.BENCH_LOG ?? 'silent',
  process.env.BENCH_LOG ? process.stderr : new Writable({ write: (_c, _e, cb) => cb() }),
);

/**
 * Citizen `n` and the shout its oath writes, ids made from `ms` and `n`: the snapshot's and the
 * journal tail's in id spaces of their own.
 */
function oathOf(kind: 'seed' | 'tail', n: number, ms: number, at: string) {
  const hex = ms.toString(16).padStart(12, '0');
  const id = (variant: string) =>
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-${variant}-${String(n).padStart(12, '0')}`;
  const seed = kind === 'seed';
  const name = `restart-${kind}-${n}`;
  const memberId = id(seed ? '8000' : 'a000');
  return {
    citizen: {
      memberId,
      name,
      class: 'agent' as const,
      purpose: 'measure a restart',
      status: 'trillionaire' as const,
      joinedAt: at,
      passportHash: n.toString(16).padStart(64, seed ? '0' : 'b'),
    },
    message: {
      id: id(seed ? '9000' : 'b000'),
      name,
      kind: 'message' as const,
      message: seed ? `I am ${name}, here to measure a restart.` : `I am ${name}.`,
      citizenId: memberId,
      verified: true,
      wall: true,
      createdAt: at,
    },
  };
}

function seedSnapshot(dir: string, citizens: number): Promise<void> {
  const data = emptyData();
  const t = Date.parse('2026-01-01T00:00:00.000Z');
  for (let i = 0; i < citizens; i++) {
    const { citizen, message } = oathOf('seed', i, t + i, new Date(t + i).toISOString());
    data.citizens.insert(citizen, true);
    data.messages.insert(message, false);
  }
  data.seq = 1;
  return new SnapshotFile(join(dir, 'snapshot.jsonl'), join(dir, 'snapshot.json')).write(data);
}

export interface RestartFigure {
  citizens: number;
  tail: number;
  /** Median milliseconds of each open, and each one; the same in CPU time (steadier on a shared machine). */
  medianMs: number;
  ms: number[];
  medianCpuMs: number;
  cpuMs: number[];
}

/** A data folder of `citizens` in a snapshot and `tail` oaths in its journal, as this commit writes them. */
export async function seedStore(dir: string, citizens: number, tail: number): Promise<void> {
  await seedSnapshot(dir, citizens);
  // The first start computes the name keys and writes the snapshot anew with them (as a real one would have).
  const first = await openEmbeddedStore({ dir, logger, compactEvery: 1e12, compactBytes: 1e15 });
  await first.close();
  const writer = await openEmbeddedStore({ dir, logger, compactEvery: 1e12, compactBytes: 1e15 });
  const now = new Date().toISOString();
  for (let from = 0; from < tail; from += 500)
    await Promise.all(
      Array.from({ length: Math.min(500, tail - from) }, (_, i) => {
        const { citizen, message } = oathOf('tail', from + i, Date.parse(now) + from + i, now);
        return writer.citizens.add(citizen, message);
      }),
    );
  await writer.close();
}

/** Opens the store in `dir` `rounds` times: wall and CPU of each open. */
export async function openTimes(
  dir: string,
  expected: number,
  rounds: number,
): Promise<{ ms: number[]; cpuMs: number[] }> {
  const ms: number[] = [];
  const cpuMs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const store = await openEmbeddedStore({ dir, logger, compactEvery: 1e12, compactBytes: 1e15 });
    ms.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    cpuMs.push((used.user + used.system) / 1000);
    if ((await store.citizens.stats()).total !== expected) throw new Error('a restart lost citizens');
    await store.close();
  }
  return { ms, cpuMs };
}

export async function restartFigure(citizens: number, tail: number, rounds: number): Promise<RestartFigure> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-store-restart-'));
  try {
    await seedStore(dir, citizens, tail);
    const { ms, cpuMs } = await openTimes(dir, citizens + tail, rounds);
    return { citizens, tail, medianMs: median(ms), ms, medianCpuMs: median(cpuMs), cpuMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Run alone: BENCH_RESTART_CITIZENS=1000000 node bench/store-restart.ts. Paired with another commit's
// tree under the same load: BENCH_RESTART_SEED=<dir> seeds a folder and exits; BENCH_RESTART_OPEN=<dir>
// opens it BENCH_RESTART_ROUNDS times and prints the CPU of each open (a driver alternates the trees).
const env = process.env;
const run = import.meta.url === `file://${process.argv[1]}`;
if (run && env.BENCH_RESTART_SEED) {
  await seedStore(
    env.BENCH_RESTART_SEED,
    Number(env.BENCH_RESTART_CITIZENS ?? 1_000_000),
    Number(env.BENCH_RESTART_TAIL ?? 20_000),
  );
} else if (run && env.BENCH_RESTART_OPEN) {
  const expected = Number(env.BENCH_RESTART_CITIZENS ?? 1_000_000) + Number(env.BENCH_RESTART_TAIL ?? 20_000);
  const { ms, cpuMs } = await openTimes(env.BENCH_RESTART_OPEN, expected, Number(env.BENCH_RESTART_ROUNDS ?? 1));
  console.log(`open cpu ${cpuMs.map((m) => m.toFixed(0)).join(' ')} wall ${ms.map((m) => m.toFixed(0)).join(' ')}`);
} else if (run) {
  const figure = await restartFigure(
    Number(process.env.BENCH_RESTART_CITIZENS ?? 1_000_000),
    Number(process.env.BENCH_RESTART_TAIL ?? 20_000),
    Number(process.env.BENCH_RESTART_ROUNDS ?? 5),
  );
  console.log(
    `restart of ${figure.citizens.toLocaleString('en')} citizens (a shout each) + ${figure.tail.toLocaleString('en')} journal oaths: store open median ${figure.medianMs.toFixed(0)} ms (${figure.ms.map((m) => m.toFixed(0)).join(', ')}), CPU median ${figure.medianCpuMs.toFixed(0)} ms (${figure.cpuMs.map((m) => m.toFixed(0)).join(', ')})`,
  );
}
