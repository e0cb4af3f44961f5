import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One readiness condition: resolves when met (with a warning that leaves it ready, if any), throws (with a reason) when not. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void | string>;
}

export interface ReadinessState {
  ready: boolean;
  checks: Record<string, string>;
}

/** The store's folder takes a small new file: a read-only or full disk refuses it. */
export const folderWritable = (dir: string): ReadinessCheck => ({
  name: 'store',
  check: async () => {
    const probe = join(dir, '.readyz');
    try {
      await writeFile(probe, `${Date.now()}\n`);
    } finally {
      // Removed each time, so the next probe needs new room on the disk, as a write would.
      await unlink(probe).catch(() => undefined);
    }
  },
});

/**
 * The database takes a new connection and answers on it (`reachable`): a pooled connection would
 * say ready while PostgreSQL refuses the connections the next requests need.
 */
export const databaseAnswers = (reachable: () => Promise<unknown>): ReadinessCheck => ({
  name: 'store',
  check: async () => void (await reachable()),
});

/**
 * How full the embedded store is. Near its ceiling it warns and stays ready; full, it still
 * serves reads, so it stays ready too and says that writes are refused.
 */
export const storeCeiling = (capacity: () => { bytes: number; maxBytes: number }, near: number): ReadinessCheck => ({
  name: 'ceiling',
  check: async () => {
    const { bytes, maxBytes } = capacity();
    const share = `${Math.floor((100 * bytes) / maxBytes)}% of EMBEDDED_MAX_BYTES (${bytes} of ${maxBytes} bytes)`;
    if (bytes >= maxBytes) return `full: ${share}; writes answer 503 STORE_FULL; move to PostgreSQL (DATABASE_URL)`;
    if (bytes >= near * maxBytes) return `warning: ${share}; move to PostgreSQL (DATABASE_URL) before it is full`;
    return undefined;
  },
});

/** A condition known in memory (the build loaded, the server not closing). */
export const condition = (name: string, holds: () => boolean, reason: string): ReadinessCheck => ({
  name,
  check: async () => {
    if (!holds()) throw new Error(reason);
  },
});

const within = <T>(promise: Promise<T>, ms: number): Promise<T> =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
  ]);

/**
 * Readiness from its checks, run at most once per `cacheMs` however often a balancer asks (a probe
 * write per request would be a write per request), each bounded in time.
 */
export function createReadiness(checks: ReadinessCheck[], { cacheMs = 1000, timeoutMs = 2000 } = {}) {
  let last: { at: number; state: Promise<ReadinessState> } | undefined;
  async function run(): Promise<ReadinessState> {
    const results = await Promise.all(
      checks.map((c) =>
        within(c.check(), timeoutMs).then(
          (warning) => ({ ok: true, text: warning ?? 'ok' }),
          (error: unknown) => ({ ok: false, text: error instanceof Error ? error.message : String(error) }),
        ),
      ),
    );
    const state: ReadinessState = { ready: results.every((r) => r.ok), checks: {} };
    checks.forEach((c, i) => (state.checks[c.name] = results[i]!.text));
    return state;
  }
  return {
    state(): Promise<ReadinessState> {
      if (!last || Date.now() - last.at >= cacheMs) last = { at: Date.now(), state: run() };
      return last.state;
    },
  };
}
export type Readiness = ReturnType<typeof createReadiness>;
