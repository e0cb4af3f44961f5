import { createHash } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { hostname, platform } from 'node:os';
import { join } from 'node:path';

/** Who holds a lock, as the holder tells any process that asks. */
export interface LockHolder {
  pid: number;
  host: string;
  /** What the holder does with it (e.g. the URL it serves). */
  what: string;
  since: string;
}

/** A lock this process holds; released by `release()` or, whatever happens, by the process's end. */
export interface HostLock {
  release(): Promise<void>;
}

/** Another process holds the lock: its message names the holder. */
export class LockHeld extends Error {
  override readonly name = 'LockHeld';
  readonly holder: LockHolder | null;
  constructor(resource: string, holder: LockHolder | null) {
    super(
      holder
        ? `${resource} is in use by process ${holder.pid} on ${holder.host} (${holder.what}, since ${holder.since})`
        : `${resource} is in use by another process`,
    );
    this.holder = holder;
  }
}

/**
 * The socket a folder's lock is: a Linux abstract socket named after the folder itself (its device
 * and inode), which the kernel frees when its process ends, however it ends (kill -9 leaves nothing
 * stale behind). Not its path: a bind mount, or the folder renamed under a running process, is
 * another path to the same files. Elsewhere, a socket file in the folder.
 */
function socketOf(folder: string, purpose: string): string {
  const real = realpathSync(folder);
  if (platform() !== 'linux') return join(real, `.${purpose}.lock`);
  const { dev, ino } = statSync(real, { bigint: true });
  return `\0agentnode-${purpose}-${createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 32)}`;
}

const holderOf = (socket: string): Promise<LockHolder | null> =>
  new Promise((resolve) => {
    const client = createConnection(socket);
    let text = '';
    client.setEncoding('utf8');
    client.setTimeout(1000, () => client.destroy());
    client.on('data', (chunk: string) => (text += chunk));
    client.on('error', () => resolve(null));
    client.on('close', () => {
      try {
        resolve(JSON.parse(text) as LockHolder);
      } catch {
        resolve(null);
      }
    });
  });

const listen = (server: Server, socket: string): Promise<NodeJS.ErrnoException | null> =>
  new Promise((resolve) => {
    server.once('error', resolve);
    server.listen(socket, () => {
      server.off('error', resolve);
      resolve(null);
    });
  });

/**
 * Takes the exclusive lock of `folder` for `purpose` (one lock per folder and purpose) for this
 * process, or throws LockHeld naming the process that has it. Of two processes asking at once,
 * exactly one gets it.
 */
export async function lockFolder(folder: string, purpose: string, what: string): Promise<HostLock> {
  const socket = socketOf(folder, purpose);
  const holder: LockHolder = { pid: process.pid, host: hostname(), what, since: new Date().toISOString() };
  const server = createServer((connection) => connection.end(JSON.stringify(holder)));
  let error = await listen(server, socket);
  // A socket file whose process is gone (not Linux): nobody answers on it, so it is taken over.
  if (error?.code === 'EADDRINUSE' && !socket.startsWith('\0') && (await holderOf(socket)) === null) {
    await rm(socket, { force: true });
    error = await listen(server, socket);
  }
  if (error?.code === 'EADDRINUSE') throw new LockHeld(folder, await holderOf(socket));
  if (error) throw error;
  // The lock must not keep the process alive on its own.
  server.unref();
  return { release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** `lockFolder`, waiting while another process holds the lock (at most `timeoutMs`). */
export async function waitForLock(
  folder: string,
  purpose: string,
  what: string,
  { timeoutMs = 600_000, pollMs = 250 } = {},
): Promise<HostLock> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await lockFolder(folder, purpose, what);
    } catch (error) {
      if (!(error instanceof LockHeld) || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }
}
