import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CANON_URL, FLOW_SITE_URL, TEST_DIST } from './env.ts';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  dataDir: string;
  /** Every log line the server printed so far. */
  logs: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts the real server (`node api/main.ts`) on the test build and waits until it listens. */
export async function startServer(env: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'agentnode-data-'));
  const child = spawn('node_modules/.bin/node', ['api/main.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DIST_DIR: TEST_DIST, SITE_URL: FLOW_SITE_URL, CANON_URL, LOG_LEVEL: 'info', ...env, DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${logs.join('\n')}`)), 60_000);
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
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
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
