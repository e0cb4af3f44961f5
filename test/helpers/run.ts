import { spawn } from 'node:child_process';

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end as `spawnSync` does, without blocking this process: a server the test
 * started in process must go on answering the command (curl, python, a CLI tool) meanwhile.
 */
export function run(
  command: string,
  args: string[],
  { timeout = 20_000, env }: { timeout?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout, ...(env ? { env } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** `node` (the project's) run to its end with `env` added to this process's: its exit code and every line it printed. */
export async function runNode(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; lines: string[] }> {
  const { status, stdout, stderr } = await run('node_modules/.bin/node', args, { env: { ...process.env, ...env } });
  return { code: status, lines: `${stdout}\n${stderr}`.split('\n').filter(Boolean) };
}
