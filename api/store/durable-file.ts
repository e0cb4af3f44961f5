import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';

/** fsyncs a folder so a rename inside it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A lowdb adapter that is durable: write a temp file, fsync it, rename it over the target, fsync
 * the folder. (lowdb's own JSONFile renames but never fsyncs.)
 */
export class DurableJSONFile<T> implements Adapter<T> {
  #path: string;
  constructor(path: string) {
    this.#path = path;
  }

  async read(): Promise<T | null> {
    let handle;
    try {
      handle = await open(this.#path, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    try {
      return JSON.parse(await handle.readFile('utf8')) as T;
    } finally {
      await handle.close();
    }
  }

  async write(data: T): Promise<void> {
    const temp = `${this.#path}.tmp`;
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(JSON.stringify(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, this.#path);
    await syncDir(dirname(this.#path));
  }
}
