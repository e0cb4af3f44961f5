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

const ITEMS_PER_CHUNK = 2000;

/**
 * The JSON text of a value, in pieces: the long lists of a top-level object go a few thousand
 * items at a time, so that writing a large snapshot (100,000 citizens stringify in about 100 ms)
 * gives the event loop back between pieces instead of stalling every request for that long.
 */
export function* jsonChunks(data: unknown, itemsPerChunk = ITEMS_PER_CHUNK): Generator<string> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return yield JSON.stringify(data);
  let first = true;
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined) continue;
    const head = `${first ? '{' : ','}${JSON.stringify(key)}:`;
    first = false;
    if (!Array.isArray(value) || value.length <= itemsPerChunk) {
      yield head + JSON.stringify(value);
      continue;
    }
    yield `${head}[`;
    for (let i = 0; i < value.length; i += itemsPerChunk) {
      yield (i > 0 ? ',' : '') + JSON.stringify(value.slice(i, i + itemsPerChunk)).slice(1, -1);
    }
    yield ']';
  }
  yield first ? '{}' : '}';
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
      for (const chunk of jsonChunks(data)) await handle.write(chunk);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, this.#path);
    await syncDir(dirname(this.#path));
  }
}
