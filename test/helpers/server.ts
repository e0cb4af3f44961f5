import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { sharedDnsResponder } from './dns-responder.ts';
import { CANON_URL, FLOW_SITE_URL, TEST_DIST } from './env.ts';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  dataDir: string;
  /** Every log line the server printed so far. */
  logs: string[];
  /**
   * Resolves with the first log line from index `from` on (0 by default) that `match` accepts, as
   * soon as the server prints it (it flushes its log every 200 ms); fails after `timeoutMs` (5 s).
   */
  waitForLog(match: (line: string) => boolean, options?: { from?: number; timeoutMs?: number }): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the real server (`node api/main.ts`) on the test build and waits until it listens. Its
 * reverse-DNS verification asks a responder on loopback (DNS_SERVERS; by default one per test
 * process that knows no name), never the machine's resolver: crawler User-Agents the tests send
 * start lookups, and a test sends no packet off this machine.
 */
export async function startServer(env: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'agentnode-data-'));
  const dns = env.DNS_SERVERS ?? (await sharedDnsResponder()).address;
  const child = spawn('node_modules/.bin/node', ['api/main.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DIST_DIR: TEST_DIST,
      SITE_URL: FLOW_SITE_URL,
      CANON_URL,
      LOG_LEVEL: 'info',
      ...env,
      DATA_DIR: dataDir,
      DNS_SERVERS: dns,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const lineListeners = new Set<() => void>();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${logs.join('\n')}`)), 60_000);
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
        for (const listener of lineListeners) listener();
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
    dataDir,
    logs,
    waitForLog(match, { from = 0, timeoutMs = 5000 } = {}) {
      return new Promise<string>((resolve, reject) => {
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
          reject(
            new Error(
              `no matching log line within ${timeoutMs} ms; the last lines:\n${logs.slice(Math.max(from, logs.length - 5)).join('\n')}`,
            ),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          lineListeners.delete(look);
        };
        lineListeners.add(look);
        look();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
