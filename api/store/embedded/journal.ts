import { constants } from 'node:fs';
import { open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { CHUNK_BYTES, readLines, syncDir, type ChunkOptions } from './durable-file.ts';

/** One journal line: a sequence number, an operation type and its value. */
export interface JournalEntry {
  seq: number;
  op: string;
  v: unknown;
}

// O_DSYNC: a write returns once its bytes are on disk, as write + fdatasync would, in one system call
// (one trip to libuv's thread pool per group instead of two).
const WRITE_DSYNC = constants.O_RDWR | constants.O_CREAT | constants.O_DSYNC;
/**
 * Journal files are filled with zeros ahead of the writes, as PostgreSQL fills its WAL segments:
 * a durable write into blocks the file already has need not also make its new length durable, which
 * took about a tenth of an oath's throughput. The data ends at the first zero byte (JSON text has none).
 */
export const PREALLOCATE_BYTES = 4 * 1024 * 1024;

/** Where a journal file's data ends: at its first zero byte, or its end; read a chunk at a time. */
async function endOfData(handle: FileHandle): Promise<{ end: number; size: number }> {
  const { size } = await handle.stat();
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  for (let position = 0; position < size;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) break;
    const zero = buffer.subarray(0, bytesRead).indexOf(0);
    if (zero !== -1) return { end: position + zero, size };
    position += bytesRead;
  }
  return { end: size, size };
}

/** Where the last whole line of the first `end` bytes ends (after its newline); 0 when there is none. */
async function endOfLastLine(handle: FileHandle, end: number): Promise<number> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  for (let to = end; to > 0;) {
    const from = Math.max(0, to - CHUNK_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, to - from, from);
    const newline = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline !== -1) return from + newline + 1;
    to = from;
  }
  return 0;
}

const NAME = /^journal-(\d{12})\.jsonl$/;
const fileName = (firstSeq: number) => `journal-${String(firstSeq).padStart(12, '0')}.jsonl`;

/** An optional observer of durable writes (metrics): the journal reports, it does not know who listens. */
export interface JournalObserver {
  /** A group of appends made durable in one write. */
  written(seconds: number, groupSize: number): void;
  /** A group of appends the disk refused. */
  failed(groupSize: number): void;
}

interface Pending {
  line: string;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * An append-only JSON Lines journal with group commit: appends that arrive while a write is under
 * way share the next durable write. An append resolves only once its line is on
 * disk. A write that fails is cut back off the file, so a later append never follows a torn line.
 */
export class Journal {
  readonly dir: string;
  #handle: FileHandle | undefined;
  #file = '';
  #size = 0;
  /** Bytes of the current file already on disk (data and zeros). */
  #allocated = 0;
  /** Off after the disk refused zeros, until the next file: a nearly full disk is not asked again each write. */
  #preallocating = true;
  #pending: Pending[] = [];
  #writing: Promise<void> | undefined;
  #rotating: Promise<void> | undefined;
  #diskWrites = 0;
  /** Data bytes of each journal file before the current one that is still on disk, by name. */
  #older = new Map<string, number>();
  readonly #chunks: ChunkOptions;

  /** Bytes in the current journal file. */
  get size(): number {
    return this.#size;
  }

  /**
   * Bytes in every journal file on disk: what a start would replay. Compaction counts these, not
   * only the current file's, since every start opens a new file.
   */
  get totalSize(): number {
    let total = this.#size;
    for (const bytes of this.#older.values()) total += bytes;
    return total;
  }

  /** How many journal files are on disk (the current one too, once it is open). */
  get files(): number {
    return this.#older.size + (this.#file ? 1 : 0);
  }

  /** How many durable writes this journal has made (appends share them). */
  get diskWrites(): number {
    return this.#diskWrites;
  }

  readonly #observer: JournalObserver | undefined;

  /** `chunks`: how much replay reads at a time, and the longest line it may make a string of. */
  constructor(dir: string, observer?: JournalObserver, chunks: ChunkOptions = {}) {
    this.dir = dir;
    this.#observer = observer;
    this.#chunks = chunks;
  }

  /**
   * Reads every journal file in order, a chunk at a time, and hands each entry to `onEntry` as it
   * is read; a line that does not parse is reported and skipped. Files with no data are removed.
   */
  async replay(onEntry: (entry: JournalEntry) => void, onTorn: (file: string, lineNo: number) => void): Promise<void> {
    const files = (await readdir(this.dir)).filter((f) => NAME.test(f)).sort();
    const empty: string[] = [];
    for (const file of files) {
      const { bytes } = await readLines(
        join(this.dir, file),
        (line, lineNo) => {
          if (line === '') return;
          let entry: JournalEntry;
          try {
            entry = JSON.parse(line) as JournalEntry;
          } catch {
            return onTorn(file, lineNo);
          }
          onEntry(entry);
        },
        { ...this.#chunks, zeroEnds: true },
      );
      if (join(this.dir, file) === this.#file) continue;
      if (bytes === 0) empty.push(file);
      else this.#older.set(file, bytes);
    }
    // A start that wrote nothing left an empty file; each start opens one, so they would pile up.
    if (empty.length > 0) await Promise.all(empty.map((f) => unlink(join(this.dir, f)).catch(() => undefined)));
  }

  /** Opens a new journal file whose first entry will be `firstSeq`, and makes it current. */
  async rotate(firstSeq: number): Promise<string[]> {
    const swap = async () => {
      // No write may be under way while the file changes. Only the write under way now is awaited:
      // a drain that starts from here on waits for the swap itself (#drain awaits #rotating), so
      // waiting for it too would wait forever.
      await this.#writing;
      const old = (await readdir(this.dir)).filter((f) => NAME.test(f) && f !== fileName(firstSeq));
      const previous = this.#handle;
      if (this.#file) this.#older.set(basename(this.#file), this.#size);
      this.#file = join(this.dir, fileName(firstSeq));
      this.#older.delete(fileName(firstSeq));
      this.#size = 0;
      this.#handle = undefined;
      this.#preallocating = true;
      await previous?.close();
      this.#handle = await this.#reopen();
      await syncDir(this.dir);
      return old;
    };
    const swapping = swap();
    this.#rotating = swapping.then(
      () => undefined,
      () => undefined,
    );
    try {
      return await swapping;
    } finally {
      this.#rotating = undefined;
    }
  }

  async #reopen(): Promise<FileHandle> {
    if (!this.#file) throw new Error('journal has no current file');
    // Private whatever the umask: the store holds passport hashes.
    const handle = await open(this.#file, WRITE_DSYNC, 0o600);
    try {
      const { end, size } = await endOfData(handle);
      this.#allocated = size;
      // A crash can leave this very file (its name is the next entry's) ending in a torn line:
      // appending after it would glue the next acknowledged entry to it. Zeroed from its last newline.
      const whole = await endOfLastLine(handle, end);
      if (whole < end) await handle.write(Buffer.alloc(end - whole), 0, end - whole, whole);
      this.#size = whole;
    } catch (error) {
      await handle.close();
      throw error;
    }
    return handle;
  }

  /** Zeros for the next writes; when the disk has no room for them, writes simply grow the file. */
  async #preallocate(handle: FileHandle, needed: number): Promise<void> {
    const length = Math.max(PREALLOCATE_BYTES, needed);
    try {
      const { bytesWritten } = await handle.write(Buffer.alloc(length), 0, length, this.#allocated);
      if (bytesWritten !== length) throw new Error('short write');
      this.#allocated += length;
    } catch {
      this.#preallocating = false;
      await handle.truncate(this.#allocated).catch(() => undefined);
    }
  }

  /** Removes journal files whose entries a snapshot now holds. */
  async remove(files: string[]): Promise<void> {
    for (const f of files) this.#older.delete(f);
    await Promise.all(files.map((f) => unlink(join(this.dir, f)).catch(() => undefined)));
    await syncDir(this.dir);
  }

  /** Appends one entry; resolves when it is on disk. */
  append(entry: JournalEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ line: `${JSON.stringify(entry)}\n`, resolve, reject });
      this.#writing ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    await this.#rotating;
    while (this.#pending.length > 0) {
      const group = this.#pending;
      this.#pending = [];
      const data = Buffer.from(group.map((p) => p.line).join(''));
      const started = performance.now();
      try {
        // A journal that could not be opened (read-only or full disk) is retried on each write.
        const handle = (this.#handle ??= await this.#reopen());
        if (this.#preallocating && this.#size + data.length > this.#allocated)
          await this.#preallocate(handle, data.length);
        const { bytesWritten } = await handle.write(data, 0, data.length, this.#size);
        if (bytesWritten !== data.length) throw new Error('short write');
        this.#diskWrites++;
        this.#size += data.length;
        this.#observer?.written((performance.now() - started) / 1000, group.length);
        for (const p of group) p.resolve();
      } catch (error) {
        await this.#handle?.truncate(this.#size).catch(() => undefined);
        this.#allocated = Math.min(this.#allocated, this.#size);
        this.#observer?.failed(group.length);
        for (const p of group) p.reject(error);
      }
    }
    this.#writing = undefined;
  }

  async close(): Promise<void> {
    await this.#writing;
    await this.#handle?.close();
    this.#handle = undefined;
  }
}
