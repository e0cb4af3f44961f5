import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { logLine } from './raw.ts';

/** The real server with preload.ts loaded: a test can collect its garbage and move its clock. */
export interface ControlledServer extends ServerProcess {
  /** A full collection in the server (so heap readings are what is kept, not garbage). */
  gc(): Promise<void>;
  /** Moves the server's clock forward by `ms`. */
  moveClock(ms: number): Promise<void>;
}

export async function controlled(env: Record<string, string> = {}): Promise<ControlledServer> {
  const file = join(mkdtempSync(join(tmpdir(), 'agentnode-control-')), 'command');
  const server = await startServerProcess({
    ...env,
    HOSTILE_CONTROL: file,
    NODE_OPTIONS: '--expose-gc --import=./test/hostile/preload.ts',
  });
  let count = 0;
  const send = async (command: string) => {
    writeFileSync(file, command);
    const from = server.logs.length;
    const n = ++count;
    server.child.kill('SIGUSR2');
    await logLine(server, from, (line) => line === `hostile-control: done ${n}`);
  };
  return Object.assign(server, { gc: () => send('gc'), moveClock: (ms: number) => send(`clock ${ms}`) });
}
