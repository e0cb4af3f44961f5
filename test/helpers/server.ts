import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { loadConfig } from '../../api/config.ts';
import { startServer as startGateway } from '../../api/server.ts';
import { DEFAULT_RETENTION, setLedgerRetention } from '../../api/telemetry/ledger/ledger.ts';
import { sharedDnsResponder } from './dns-responder.ts';
import { CANON_URL, FLOW_SITE_URL, TEST_DIST } from './env.ts';

/** A running server as a test sees it: its address, its data folder and its log. */
export interface TestServer {
  url: string;
  dataDir: string;
  /** Every log line the server printed so far. */
  logs: string[];
  /**
   * Resolves with the first log line from index `from` on (0 by default) that `match` accepts, as
   * soon as the server prints it (it flushes its log every 200 ms); fails after `timeoutMs` (5 s).
   */
  waitForLog(match: (line: string) => boolean, options?: { from?: number; timeoutMs?: number }): Promise<string>;
  /** Stops it as SIGTERM does (in flight requests finish); resolves with the exit code (0 in process). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * PORT and SITE_URL of a loopback port free now, for a server whose documents must name the address
 * it serves (agents follow their links; one-shots run as written). A fixed port would be shared by
 * test files running side by side.
 */
export async function ownAddress(): Promise<{ PORT: string; SITE_URL: string }> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return { PORT: String(port), SITE_URL: `http://127.0.0.1:${port}` };
}

/** A server in a process of its own, for tests that signal, kill, or read the process. */
export interface ServerProcess extends TestServer {
  child: ChildProcess;
}

/**
 * The environment a test server runs with. Its reverse-DNS verification asks a responder on
 * loopback (DNS_SERVERS; by default one per test process that knows no name), never the
 * machine's resolver: crawler User-Agents the tests send start lookups, and a test sends no packet
 * off this machine.
 */
async function serverEnv(env: Record<string, string>, spawned = false): Promise<Record<string, string>> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    DIST_DIR: TEST_DIST,
    SITE_URL: FLOW_SITE_URL,
    CANON_URL,
    LOG_LEVEL: 'info',
    ...env,
    // One store said once: `node api/main.ts` on PostgreSQL gets no DATA_DIR (it would refuse to
    // start); in process, the folder holds only the receipt log's signing key.
    ...(env.DATABASE_URL && spawned
      ? {}
      : { DATA_DIR: env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'agentnode-data-')) }),
    DNS_SERVERS: env.DNS_SERVERS ?? (await sharedDnsResponder()).address,
  };
}

/** The log lines a server printed, and waits for the ones a test expects. */
function logWatch() {
  const logs: string[] = [];
  const listeners = new Set<() => void>();
  const add = (line: string) => {
    logs.push(line);
    for (const listener of listeners) listener();
  };
  const waitForLog: TestServer['waitForLog'] = (match, { from = 0, timeoutMs = 5000 } = {}) =>
    new Promise<string>((resolve, reject) => {
      let seen = from;
      const look = () => {
        for (; seen < logs.length; seen++) {
          const line = logs[seen]!;
          if (!match(line)) continue;
          done();
          return resolve(line);
        }
      };
      const timer = setTimeout(() => {
        done();
        const last = logs.slice(Math.max(from, logs.length - 5)).join('\n');
        reject(new Error(`no matching log line within ${timeoutMs} ms; the last lines:\n${last}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(look);
      };
      listeners.add(look);
      look();
    });
  return { logs, add, waitForLog };
}

/**
 * Starts the real server (engine and gateway, `api/server.ts`, as `npm start` does) in this test's
 * own process on port 0, on the test build. Its log lines are collected in memory, as the process
 * helper collects a child's output. Use `startServerProcess` where a test needs signals, a crash,
 * the process's own figures (memory, descriptors) or a startup that must fail.
 */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  const full = await serverEnv(env);
  const { logs, add, waitForLog } = logWatch();
  const sink = {
    write(chunk: string, callback?: () => void) {
      for (const line of chunk.split('\n')) if (line !== '') add(line);
      callback?.();
      return true;
    },
  };
  const running = await startGateway(loadConfig(full), { logDestination: sink });
  let stopped: Promise<number> | undefined;
  return {
    url: running.url,
    dataDir: full.DATA_DIR ?? '',
    logs,
    waitForLog,
    // What api/main.ts does on SIGTERM, without ending this process.
    stop: () =>
      (stopped ??= (async () => {
        running.logger.info({ signal: 'SIGTERM' }, 'shutting down');
        await running.close();
        running.logger.info('stopped');
        running.logger.flush();
        // The ledger's retention is process-wide (one ledger a process): a server started here with
        // LEDGER_HOURS or LEDGER_DAYS set it, and the next test file of this worker must find the defaults.
        setLedgerRetention(DEFAULT_RETENTION);
        return 0;
      })()),
  };
}

/** Starts the real server (`node api/main.ts`) as a child process and waits until it listens. */
export async function startServerProcess(env: Record<string, string> = {}): Promise<ServerProcess> {
  const full = await serverEnv(env, true);
  const child = spawn('node_modules/.bin/node', ['api/main.ts'], {
    env: { ...process.env, ...full },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { logs, add, waitForLog } = logWatch();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${logs.join('\n')}`)), 60_000);
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        add(line);
        const match = /"msg":"listening"/.test(line) && /"url":"([^"]+)"/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
    }
    void exited.then((code) => reject(new Error(`server exited with ${code}:\n${logs.join('\n')}`)));
  });
  return {
    url,
    child,
    dataDir: full.DATA_DIR ?? '',
    logs,
    waitForLog,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
