import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { execFileSync } from 'node:child_process';
import { freePort } from './pg-cluster.ts';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** True when Debian's pgbouncer is installed; under CI=true a missing one is an error, never a skip. */
export function pgbouncerAvailable(): boolean {
  if (existsSync(PGBOUNCER)) return true;
  if (process.env.CI === 'true') throw new Error("the PgBouncer tests need Debian's pgbouncer (/usr/sbin/pgbouncer)");
  console.warn('\n*** No /usr/sbin/pgbouncer: the PgBouncer tests are skipped (apt-get install pgbouncer). ***\n');
  return false;
}

/** A PgBouncer of the test's own in front of a PostgreSQL port: its port, its log, and a stop. */
export interface Bouncer {
  port: number;
  /** `url` with its port replaced by the bouncer's. */
  through(url: string): string;
  logs: string[];
  stop(): Promise<void>;
}

/**
 * Starts `/usr/sbin/pgbouncer` in transaction pooling (the usual way past PostgreSQL's connection
 * limit) on a free loopback port, with a temp config, trust authentication for `postgres`, and no
 * startup parameter tolerated beyond PgBouncer's own list: a client that sends one is refused.
 */
export async function startBouncer(postgresPort: number, poolSize = 10): Promise<Bouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'agentnode-pgbouncer-'));
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${postgresPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      // A server that went away is tried again soon: the restart test waits on it.
      'server_login_retry = 1',
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: as root it runs as the `postgres` OS user.
  const root = process.getuid?.() === 0;
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    for (const f of [dir, ini, join(dir, 'users.txt')]) chownSync(f, uid, gid);
  }
  const [bin, args] = root ? ['runuser', ['-u', 'postgres', '--', PGBOUNCER, ini]] : [PGBOUNCER, [ini]];
  const child: ChildProcess = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pgbouncer did not start:\n${logs.join('\n')}`)), 10_000);
    for (const stream of [child.stdout!, child.stderr!])
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
        if (/listening on 127\.0\.0\.1:/.test(line)) {
          clearTimeout(timer);
          resolve();
        }
      });
    void exited.then(() => reject(new Error(`pgbouncer exited:\n${logs.join('\n')}`)));
  });
  return {
    port,
    logs,
    through: (url) => url.replace(/:(\d+)\//, `:${port}/`),
    async stop() {
      // runuser passes SIGTERM on to pgbouncer.
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
