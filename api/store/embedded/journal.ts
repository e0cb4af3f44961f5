import { constants } from 'node:fs';
import { open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { CHUNK_BYTES, readRecordLines, syncDir, type ChunkOptions, type LineRead } from './durable-file.ts';
import { checksumHolds, sealedLine } from './checksum.ts';

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

/**
 * Where a journal file's data ends: after its last byte that is not zero (the zeros after it were
 * written ahead of the writes), read a chunk at a time from the end. A zero byte inside the data is
 * damage the checksums find, not the end: a reader that stopped at the first one lost every record
 * after it.
 */
const ZEROS = Buffer.alloc(CHUNK_BYTES);
async function endOfData(handle: FileHandle): Promise<{ end: number; size: number }> {
  const { size } = await handle.stat();
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  for (let to = size; to > 0;) {
    const from = Math.max(0, to - CHUNK_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, to - from, from);
    // A chunk of the zeros written ahead is passed over in one comparison, not a byte at a time.
    if (!buffer.subarray(0, bytesRead).equals(ZEROS.subarray(0, bytesRead)))
      for (let i = bytesRead - 1; i >= 0; i--) if (buffer[i] !== 0) return { end: from + i + 1, size };
    to = from;
  }
  return { end: 0, size };
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

/**
 * A journal file: `journal-<its first entry's sequence>.jsonl`, 12 digits or more. A sequence past
 * 12 digits makes a longer name: one only 12 digits matched was never replayed.
 */
export const JOURNAL_NAME = /^journal-(\d{12,})\.jsonl$/;
const NAME = JOURNAL_NAME;
const fileName = (firstSeq: number) => `journal-${String(firstSeq).padStart(12, '0')}.jsonl`;

/** The journal files among `names`, in the order of their sequences (by number: names differ in length). */
export function journalFiles(names: string[]): string[] {
  const seqOf = (name: string) => BigInt(NAME.exec(name)![1]!);
  return names
    .filter((name) => NAME.test(name))
    .map((name) => ({ name, seq: seqOf(name) }))
    .sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0))
    .map(({ name }) => name);
}

/**
 * Whether a damaged line is what a write cut short by a crash leaves: the file ends inside it (no
 * newline), or it holds a NUL byte (zeros written ahead, or length the file system gave, that the
 * write never reached). A whole line without a NUL was written whole, and may have been
 * acknowledged: that is damage. So is a last line whose bytes but its last hold their checksum: a
 * whole entry whose newline alone was overwritten (a torn write is a prefix of its line, and never
 * holds more than it).
 */
export function tornShaped(line: LineRead, bytes: Buffer): boolean {
  if (bytes.includes(0)) return true;
  if (!line.last) return false;
  return !(line.checked && bytes.length > 1 && checksumHolds(bytes.subarray(0, -1)));
}

/** An optional observer of durable writes (metrics): the journal reports, it does not know who listens. */
export interface JournalObserver {
  /** A group of appends made durable in one write. */
  written(seconds: number, groupSize: number): void;
  /** A group of appends the disk refused. */
  failed(groupSize: number): void;
}

/** Bytes of a file that fail their checksum or do not parse: a run of damaged lines. */
export interface Damage {
  file: string;
  /** Where the damaged bytes start and end in the file. */
  offset: number;
  end: number;
  /** Intact records after it in the same file: journal entries, or snapshot lines (blocks of records). */
  intactAfter: number;
  unit?: 'entries' | 'lines';
  /** What was wrong, where more is known than that the bytes fail their checksum or do not parse. */
  reason?: string;
}

/** What a replay found. */
export interface JournalScan {
  damage: Damage[];
  /** The torn tail of the newest file, cut. */
  torn: { file: string; offset: number; bytes: number } | undefined;
  /** Torn tails of older files of the format before checksums (which left them there), cut. */
  oldTails: { file: string; offset: number; bytes: number }[];
  /** Intact entries written before entries carried checksums (format 1): the next snapshot takes them. */
  unchecked: number;
  entries: number;
}

/** How a replay reads. */
export interface ReplayOptions {
  /** Cut nothing and remove nothing: a check of a stopped store or a backup. */
  keep?: boolean;
  /** Why an entry that holds its checksum still cannot be used (journal-entry.ts), or undefined. */
  check?: (entry: JournalEntry) => string | undefined;
}

interface Pending {
  line: Buffer;
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
   * Reads every journal file in order, a chunk at a time, and hands each intact entry to `onEntry`
   * as it is read. What does not hold its checksum, does not parse, does not follow the entry
   * before it (sequences only increase) or that `check` refuses is damage, and is given back, with
   * the intact entries after it in its file, never skipped silently: except the torn tail, lines
   * ending the newest file with no intact entry after them that a write cut short by a crash left
   * (see `tornShaped`), which no acknowledged write reached; that is cut off (zeroed) here, unless
   * `keep`. Files with no data are removed (unless `keep`).
   */
  async replay(onEntry: (entry: JournalEntry) => void, options: ReplayOptions = {}): Promise<JournalScan> {
    const { keep = false, check } = options;
    const files = journalFiles(await readdir(this.dir));
    const empty: string[] = [];
    const scan: JournalScan = { damage: [], torn: undefined, oldTails: [], unchecked: 0, entries: 0 };
    let newest: { file: string; end: number; damage: Damage[] } | undefined;
    // Runs of damage holding a line no torn write leaves: never cut, whatever follows them.
    const whole = new Set<Damage>();
    // Sequences only increase, across files: a repeated line (a restore that joined files) would
    // apply its write twice, and one past 2^53 stops counting (seq + 1 === seq).
    let lastSeq = 0;
    for (const file of files) {
      const path = join(this.dir, file);
      const handle = await open(path, 'r');
      const { end } = await endOfData(handle).finally(() => handle.close());
      const damage: Damage[] = [];
      let intact = 0;
      let checked = 0;
      let open_: Damage | undefined;
      const damaged = (line: LineRead, bytes: Buffer, reason?: string) => {
        // Lines that fail their checksum side by side are one place; an entry with a reason is its own.
        if (open_ && !open_.reason && !reason && open_.end === line.offset) open_.end = line.end;
        else
          damage.push(
            (open_ = {
              file: path,
              offset: line.offset,
              end: line.end,
              intactAfter: intact,
              unit: 'entries',
              ...(reason ? { reason } : {}),
            }),
          );
        if (reason || !tornShaped(line, bytes)) whole.add(open_);
      };
      await readRecordLines(
        path,
        (line, bytes) => {
          let entry: JournalEntry | undefined;
          // A line without its newline is never used, whatever it holds: a torn write's, or damage (tornShaped).
          if (line.text !== undefined && !line.last)
            try {
              entry = JSON.parse(line.text) as JournalEntry;
            } catch {
              entry = undefined;
            }
          if (entry === undefined) return damaged(line, bytes);
          if (entry === null || typeof entry.seq !== 'number' || typeof entry.op !== 'string')
            return damaged(line, bytes, 'not a journal entry (no numeric seq and op)');
          if (!Number.isSafeInteger(entry.seq))
            return damaged(
              line,
              bytes,
              `sequence ${entry.seq} is no whole number below 2^53, where numbers stop counting`,
            );
          if (entry.seq <= lastSeq)
            return damaged(
              line,
              bytes,
              `sequence ${entry.seq} does not follow ${lastSeq}: a repeated or misplaced entry`,
            );
          const fault = check?.(entry);
          if (fault) return damaged(line, bytes, fault);
          lastSeq = entry.seq;
          open_ = undefined;
          intact++;
          if (!line.checked) scan.unchecked++;
          else checked++;
          scan.entries++;
          onEntry(entry);
        },
        { ...this.#chunks, end },
      );
      // Until here intactAfter held the intact entries before each damage: now those after it.
      for (const d of damage) d.intactAfter = intact - d.intactAfter;
      // The format before checksums cut a torn tail only off the file it reopened, so an older file of
      // it may still end in one from a crash long ago: that too was never acknowledged.
      const last = damage.at(-1);
      if (
        checked === 0 &&
        last &&
        !whole.has(last) &&
        last.intactAfter === 0 &&
        last.end === end &&
        path !== join(this.dir, files.at(-1)!)
      ) {
        damage.pop();
        scan.oldTails.push({ file: path, offset: last.offset, bytes: last.end - last.offset });
        if (!keep) await this.#cut(path, last.offset, last.end);
      }
      scan.damage.push(...damage);
      if (end > 0) newest = { file: path, end, damage };
      if (path === this.#file) continue;
      if (end === 0) empty.push(file);
      else this.#older.set(file, end);
    }
    // Damage at the very end of the newest file, with no intact entry after it, that a torn write left.
    const tail = newest?.damage.at(-1);
    if (newest && tail && !whole.has(tail) && tail.intactAfter === 0 && tail.end === newest.end) {
      scan.damage.splice(scan.damage.indexOf(tail), 1);
      scan.torn = { file: newest.file, offset: tail.offset, bytes: tail.end - tail.offset };
      if (!keep) await this.#cut(newest.file, tail.offset, tail.end);
      const name = basename(newest.file);
      if (this.#older.has(name)) this.#older.set(name, tail.offset);
    }
    // A start that wrote nothing left an empty file; each start opens one, so they would pile up.
    if (!keep && empty.length > 0)
      await Promise.all(empty.map((f) => unlink(join(this.dir, f)).catch(() => undefined)));
    return scan;
  }
  /** Zeroes a torn tail on disk, so the next start does not find it in a file no longer the newest. */
  async #cut(path: string, from: number, to: number): Promise<void> {
    const handle = await open(path, 'r+').catch(() => undefined);
    // A read-only folder: the tail stays, and is cut again at the next start that can write.
    if (!handle) return;
    try {
      await handle.write(Buffer.alloc(to - from), 0, to - from, from);
      await handle.sync();
    } finally {
      await handle.close();
    }
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
      // Format 2: each entry behind the CRC-32C of its bytes (checksum.ts).
      this.#pending.push({ line: sealedLine(JSON.stringify(entry)), resolve, reject });
      this.#writing ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    await this.#rotating;
    while (this.#pending.length > 0) {
      const group = this.#pending;
      this.#pending = [];
      const data = group.length === 1 ? group[0]!.line : Buffer.concat(group.map((p) => p.line));
      const started = performance.now();
      try {
        // A journal that could not be opened (read-only or full disk) is retried on each write.
        const handle = (this.#handle ??= await this.#reopen());
        if (this.#preallocating && this.#size + data.length > this.#allocated)
          await this.#preallocate(handle, data.length);
        // A short write is written on from where it stopped: a full disk or the file-size limit
        // then says which it is (ENOSPC, EFBIG), and the store knows what to do.
        for (let written = 0; written < data.length;) {
          const { bytesWritten } = await handle.write(data, written, data.length - written, this.#size + written);
          if (bytesWritten === 0) throw new Error('short write');
          written += bytesWritten;
        }
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
