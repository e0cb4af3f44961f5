import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { carriesChecksum, checksumHolds, CHECK_BYTES, sealInPlace } from './checksum.ts';

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
 * Files are read and written a chunk at a time, never as one string: V8 strings stop at
 * 2^29 - 24 characters (about 512 MiB), and a store whose snapshot passed that could not start
 * (a 1,043 MB snapshot gave `RangeError: Invalid string length`).
 */
export interface ChunkOptions {
  /** Bytes read or written at a time. */
  chunkBytes?: number;
  /** The longest string a read may make (one line, one record); tests set a tiny one. */
  maxStringBytes?: number;
}
/** Small enough that making one chunk's text holds the event loop a few milliseconds at most. */
export const CHUNK_BYTES = 256 * 1024;
/** V8's longest string, in bytes of Latin-1 text (UTF-8 text makes no longer a string than its bytes). */
export const MAX_STRING_BYTES = 2 ** 29 - 24;

/** How much a read or a write moved, and in how many chunks. */
export interface ChunkStats {
  bytes: number;
  chunks: number;
}

/** A record in a file is longer than the longest string a read may make. */
export class StringLimitError extends Error {
  override name = 'StringLimitError';
  constructor(path: string, bytes: number, limit: number) {
    super(
      `${path}: a record of more than ${bytes} bytes is longer than the longest string a read may make (${limit} bytes)`,
    );
  }
}

/** Gathers the bytes of one line or record across chunks, up to the string limit. */
class Pieces {
  #pieces: Buffer[] = [];
  #bytes = 0;
  readonly path: string;
  readonly limit: number;
  constructor(path: string, limit: number) {
    this.path = path;
    this.limit = limit;
  }
  get empty(): boolean {
    return this.#bytes === 0;
  }
  /** Keeps a copy: the chunk buffer is read into again. */
  add(buf: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.#check(end - start);
    this.#pieces.push(Buffer.from(buf.subarray(start, end)));
    this.#bytes += end - start;
  }
  /** The text of what was gathered followed by buf[start, end), and a fresh start. */
  take(buf: Buffer, start: number, end: number): string {
    this.#check(end - start);
    let text: string;
    if (this.#bytes === 0) text = buf.toString('utf8', start, end);
    else {
      this.#pieces.push(buf.subarray(start, end));
      text = Buffer.concat(this.#pieces).toString('utf8');
    }
    this.#pieces = [];
    this.#bytes = 0;
    return text;
  }
  /** The bytes gathered followed by buf[start, end) (a view of buf when nothing was gathered), and a fresh start. */
  takeBytes(buf: Buffer, start: number, end: number): Buffer {
    this.#check(end - start);
    let bytes: Buffer;
    if (this.#bytes === 0) bytes = buf.subarray(start, end);
    else {
      this.#pieces.push(buf.subarray(start, end));
      bytes = Buffer.concat(this.#pieces);
    }
    this.#pieces = [];
    this.#bytes = 0;
    return bytes;
  }
  #check(more: number): void {
    if (this.#bytes + more > this.limit) throw new StringLimitError(this.path, this.#bytes + more, this.limit);
  }
}

/** One line as `readRecordLines` gives it. */
export interface LineRead {
  /** The line's text (after its checksum, when it carries one); undefined when its checksum fails. */
  text: string | undefined;
  /** Where the line starts in the file, and where it ends (after its newline, if it has one). */
  offset: number;
  end: number;
  lineNo: number;
  /** It carried a checksum (which held, when `text` is set). */
  checked: boolean;
  /** The file ends inside this line: it has no newline. */
  last: boolean;
}

/**
 * Gives each line of a file's first `end` bytes (all of it by default) to `onLine`, read a chunk
 * at a time, with its byte offset: a line that carries a checksum (see checksum.ts) is checked on
 * its bytes and given without its prefix, or without text when it fails; a line of an older format
 * is given as it is. A last line without its newline is given too, marked `last`. The line's
 * bytes (without its newline) come beside it, valid only during the call: the chunk is read into again.
 */
export async function readRecordLines(
  path: string,
  onLine: (line: LineRead, bytes: Buffer) => void,
  options: ChunkOptions & { end?: number } = {},
): Promise<ChunkStats> {
  const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  const limit = options.maxStringBytes ?? MAX_STRING_BYTES;
  const pieces = new Pieces(path, limit + CHECK_BYTES);
  const buffer = Buffer.allocUnsafe(chunkBytes);
  const handle = await open(path, 'r');
  const stop = options.end ?? (await handle.stat()).size;
  let bytes = 0;
  let chunks = 0;
  let lineNo = 0;
  let lineStart = 0;
  const give = (line: Buffer, end: number, last: boolean) => {
    const checked = carriesChecksum(line);
    let text: string | undefined;
    if (!checked) text = line.toString('utf8');
    else if (checksumHolds(line)) {
      if (line.length - CHECK_BYTES > limit) throw new StringLimitError(path, line.length - CHECK_BYTES, limit);
      text = line.toString('utf8', CHECK_BYTES);
    }
    onLine({ text, offset: lineStart, end, lineNo: ++lineNo, checked, last }, line);
    lineStart = end;
  };
  try {
    while (bytes < stop) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(chunkBytes, stop - bytes), bytes);
      if (bytesRead === 0) break;
      chunks++;
      const data = buffer.subarray(0, bytesRead);
      let start = 0;
      for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10, start)) {
        give(pieces.takeBytes(data, start, nl), bytes + nl + 1, false);
        start = nl + 1;
      }
      pieces.add(data, start, bytesRead);
      bytes += bytesRead;
    }
    if (!pieces.empty) give(pieces.takeBytes(buffer, 0, 0), bytes, true);
  } finally {
    await handle.close();
  }
  return { bytes, chunks };
}

/**
 * Writes lines durably: a temp file filled a chunk at a time (the event loop runs between
 * chunks), fsynced, renamed over the target, and the folder fsynced. No string holds more than
 * one chunk.
 */
export async function writeLinesDurably(
  path: string,
  lines: Iterable<string>,
  options: ChunkOptions & { checksums?: boolean } = {},
): Promise<ChunkStats> {
  const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  // Each line behind its checksum (checksum.ts), computed on the bytes where they were written.
  const prefix = options.checksums ? CHECK_BYTES : 0;
  const temp = `${path}.tmp`;
  // Private whatever the umask: the store holds passport hashes.
  const handle = await open(temp, 'w', 0o600);
  let bytes = 0;
  let chunks = 0;
  try {
    // Lines are written into one buffer, flushed when the next does not fit (a line longer than the
    // buffer goes alone): no joined string and no new buffer a chunk, which cost a compaction of 3
    // million citizens about a second of CPU, half of it in garbage collection.
    const buffer = Buffer.allocUnsafe(chunkBytes);
    let used = 0;
    const flush = async (data: Buffer) => {
      await handle.write(data, 0, data.length, bytes);
      bytes += data.length;
      chunks++;
    };
    for (const line of lines) {
      // UTF-8 takes at least a byte and at most three a UTF-16 unit: measured only when that is not enough to tell.
      const size = line.length * 3 + prefix <= chunkBytes - used - 1 ? -1 : Buffer.byteLength(line) + prefix;
      if (size > chunkBytes - used - 1 && used > 0) {
        await flush(buffer.subarray(0, used));
        used = 0;
      }
      if (size > chunkBytes - 1) {
        const alone = Buffer.allocUnsafe(size + 1);
        alone.write(line, prefix);
        if (prefix) sealInPlace(alone, 0, size);
        alone[size] = 0x0a;
        await flush(alone);
        continue;
      }
      const from = used;
      used += prefix + buffer.write(line, used + prefix);
      if (prefix) sealInPlace(buffer, from, used);
      buffer[used++] = 0x0a;
    }
    if (used > 0) await flush(buffer.subarray(0, used));
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  await rename(temp, path);
  await syncDir(dirname(path));
  return { bytes, chunks };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * Reads a file holding one JSON object a chunk at a time, and calls `onValue(key, value)` for each
 * of its members; for the keys in `spread`, whose values are large arrays or objects, once for each
 * element instead (an object's elements come as `[key, value]`). Each member or element is handed
 * to JSON.parse alone, so none may be longer than the string limit but the file may be any size.
 * It reads the snapshots written before they were JSON Lines.
 */
export async function readJSONMembers(
  path: string,
  spread: ReadonlySet<string>,
  onValue: (key: string, value: unknown) => void,
  options: ChunkOptions = {},
): Promise<ChunkStats> {
  const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  const pieces = new Pieces(path, options.maxStringBytes ?? MAX_STRING_BYTES);
  const buffer = Buffer.allocUnsafe(chunkBytes);
  const handle = await open(path, 'r');
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** Where the text being gathered starts in this chunk, or -1 when none is. */
  let start = -1;
  /** The member whose value is being spread, and whether it is an array. */
  let spreading: { key: string; array: boolean } | undefined;
  /** A member key that may be spread, until its value's first byte says whether it is an array or object. */
  let pending: string | undefined;
  let afterSpread = false;
  let bytes = 0;
  let chunks = 0;

  const member = (text: string) => {
    if (text.trim() === '') return;
    for (const [key, value] of Object.entries(JSON.parse(`{${text}}`) as Record<string, unknown>)) onValue(key, value);
  };
  const element = (text: string) => {
    if (text.trim() === '') return;
    if (spreading!.array) onValue(spreading!.key, JSON.parse(text));
    else
      for (const entry of Object.entries(JSON.parse(`{${text}}`) as Record<string, unknown>))
        onValue(spreading!.key, entry);
  };

  try {
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, chunkBytes, bytes);
      if (bytesRead === 0) break;
      chunks++;
      bytes += bytesRead;
      if (start !== -1) start = 0;
      for (let i = 0; i < bytesRead; i++) {
        const b = buffer[i]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (b === BACKSLASH) escaped = true;
          else if (b === QUOTE) inString = false;
          continue;
        }
        if (pending !== undefined && depth === 1 && !isSpace(b) && b !== 0x7b && b !== 0x5b) pending = undefined;
        switch (b) {
          case QUOTE:
            inString = true;
            break;
          case 0x7b: // {
          case 0x5b: // [
            depth++;
            if (depth === 1) start = i + 1;
            else if (depth === 2 && pending !== undefined) {
              spreading = { key: pending, array: b === 0x5b };
              pending = undefined;
              pieces.take(buffer, 0, 0);
              start = i + 1;
            }
            break;
          case 0x7d: // }
          case 0x5d: // ]
            if (spreading && depth === 2) {
              element(pieces.take(buffer, start, i));
              spreading = undefined;
              afterSpread = true;
              start = -1;
            } else if (depth === 1) {
              if (!afterSpread) member(pieces.take(buffer, start, i));
              start = -1;
            }
            depth--;
            break;
          case 0x2c: // ,
            if (spreading && depth === 2) {
              element(pieces.take(buffer, start, i));
              start = i + 1;
            } else if (depth === 1) {
              if (!afterSpread) member(pieces.take(buffer, start, i));
              afterSpread = false;
              start = i + 1;
            }
            break;
          case 0x3a: // :
            if (depth === 1 && !spreading) {
              const key = JSON.parse(pieces.take(buffer, start, i)) as string;
              // The key goes back in front of its value, which is gathered whole unless it is spread.
              const head = Buffer.from(`${JSON.stringify(key)}:`);
              pieces.add(head, 0, head.length);
              start = i + 1;
              if (spread.has(key)) pending = key;
            }
            break;
        }
      }
      if (start !== -1) pieces.add(buffer, start, bytesRead);
    }
  } finally {
    await handle.close();
  }
  if (depth !== 0 || inString) throw new Error(`${path}: the JSON text ends before its object does`);
  return { bytes, chunks };
}
