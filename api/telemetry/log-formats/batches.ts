import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { MAX_RECORD_CHARS } from './parse.ts';

/** One batch of a log file as `npm run ingest-logs` sends it. */
export interface LogBatch {
  /** Line number (1-based) of the batch's first record in its file. */
  firstLine: number;
  /**
   * Records, with the W3C directives (CloudFront's #Fields:) that govern them in front, as UTF-8
   * bytes: the pieces in order, views of the file's reads (written out as they are, never joined).
   */
  body: readonly Uint8Array[];
  /** The body's length in bytes. */
  bytes: number;
  /** Records in the batch (directives and blank lines left out). */
  records: number;
  /**
   * The batch key, sent as Idempotency-Key: sha256 of its place in the file and its bytes, so the
   * same file loaded again (from any path, copied, or from standard input) sends the same keys.
   */
  key: string;
}

export interface BatcherOptions {
  maxLines: number;
  maxBytes: number;
}

const LF = 0x0a;
const CR = 0x0d;
const HASH = 0x23;

/**
 * Cuts a log file into batches at fixed record counts (or sooner by size), so batch boundaries,
 * and so batch keys, depend only on the file's content. Lines are given one by one (`push`) or as
 * the file's raw bytes (`pushBytes`); both give the same batches, byte for byte, as reading the
 * file with readline and pushing its lines did.
 */
export function createBatcher({ maxLines, maxBytes }: BatcherOptions) {
  let directives: string[] = [];
  // The batch's bytes: parts, and a run of the current read chunk still growing.
  let parts: Uint8Array[] = [];
  let run: Buffer | null = null;
  let runStart = 0;
  let runEnd = 0;
  let records = 0;
  let bytes = 0;
  let firstLine = 0;
  let lineNo = 0;
  // Bytes after the last line end of what pushBytes was given (a list: a long line is copied once).
  let carry: Buffer[] = [];

  const closeRun = () => {
    if (run !== null && runEnd > runStart) parts.push(run.subarray(runStart, runEnd));
    run = null;
  };

  function cut(): LogBatch | null {
    if (records === 0) return null;
    closeRun();
    const body = directives.length ? [Buffer.from(`${directives.join('\n')}\n`), ...parts] : parts;
    const hash = createHash('sha256').update(`${firstLine}\n`);
    for (const part of body) hash.update(part);
    const batch = {
      firstLine,
      body,
      bytes: body.reduce((n, part) => n + part.byteLength, 0),
      records,
      key: `log-${hash.digest('base64url')}`,
    };
    parts = [];
    records = 0;
    bytes = 0;
    return batch;
  }

  /** Room for one more record of `size` bytes (its line end included): the batches it completes before it. */
  function before(size: number, out: LogBatch[]): void {
    if (records > 0 && bytes + size > maxBytes) out.push(cut()!);
    if (records === 0) firstLine = lineNo;
  }
  function after(size: number, out: LogBatch[]): void {
    records++;
    bytes += size;
    if (records >= maxLines) out.push(cut()!);
  }

  /** One line as readline gives it (no line end). */
  function pushLine(raw: string, out: LogBatch[]): void {
    lineNo++;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    // A W3C directive governs the lines after it: a new #Fields: ends the batch before it.
    if (line.startsWith('#')) {
      const done = cut();
      if (done) out.push(done);
      directives = /^#(Version|Fields):/.test(line)
        ? [...directives.filter((d) => !d.startsWith(line.slice(0, line.indexOf(':') + 1))), line]
        : directives;
      return;
    }
    // A record too long to read is sent cut short: the server skips it as too-long.
    const record = line.length > MAX_RECORD_CHARS ? line.slice(0, MAX_RECORD_CHARS + 1) : line;
    const encoded = Buffer.from(`${record}\n`);
    before(encoded.length, out);
    closeRun();
    parts.push(encoded);
    after(encoded.length, out);
  }

  /** The lines of `text` as readline cuts them: at \n, \r\n and a lone \r. */
  function pushText(text: string, out: LogBatch[]): void {
    const body = text.endsWith('\r') ? text.slice(0, -1) : text;
    for (const line of body.split('\r')) pushLine(line, out);
  }

  /**
   * The complete lines of `buf` (up to its last \n). A line that is plain (a printable ASCII first
   * byte other than #, no CR but a last one, not longer than a record may be, valid UTF-8) is taken
   * as bytes, never made a string: the common case, and the cost of reading a file line by line.
   * Any other line goes the way readline's would.
   */
  function pushLines(buf: Buffer, from: number, end: number, out: LogBatch[]): void {
    const valid = isUtf8(buf.subarray(from, end));
    let nextCr = buf.indexOf(CR, from);
    for (let start = from; start < end;) {
      const eol = buf.indexOf(LF, start);
      let stop = eol;
      if (nextCr !== -1 && nextCr < start) nextCr = buf.indexOf(CR, start);
      const first = buf[start]!;
      let plain = valid && eol > start && first > 0x20 && first < 0x7f && first !== HASH;
      if (plain && nextCr !== -1 && nextCr < eol) {
        // \r\n ends the line; a \r anywhere else is a line end of its own (readline's rule).
        plain = nextCr === eol - 1 && eol - 1 > start;
        stop = eol - 1;
      }
      if (plain && stop - start > MAX_RECORD_CHARS) plain = false;
      if (plain) {
        lineNo++;
        const size = stop - start + 1;
        before(size, out);
        if (run !== buf || runEnd !== start || stop !== eol) {
          closeRun();
          run = buf;
          runStart = start;
        }
        if (stop === eol) runEnd = eol + 1;
        else {
          // The CR is left out: the line and its \n are not contiguous.
          runEnd = stop;
          closeRun();
          parts.push(NEWLINE);
        }
        after(size, out);
      } else pushText(buf.toString('utf8', start, eol), out);
      start = eol + 1;
    }
  }

  return {
    /** Adds one line; returns the batches it completed (most often none). */
    push(raw: string): LogBatch[] {
      const out: LogBatch[] = [];
      pushLine(raw, out);
      return out;
    },
    /** Adds the next bytes of a file, lines cut anywhere; returns the batches they completed. */
    pushBytes(chunk: Buffer): LogBatch[] {
      const out: LogBatch[] = [];
      const first = chunk.indexOf(LF);
      if (first === -1) {
        carry.push(chunk);
        return out;
      }
      // The line the carry begins is copied whole; the chunk's own lines are never copied here.
      let from = 0;
      if (carry.length) {
        const line = Buffer.concat([...carry, chunk.subarray(0, first + 1)]);
        pushLines(line, 0, line.length, out);
        from = first + 1;
      }
      const last = chunk.lastIndexOf(LF);
      pushLines(chunk, from, last + 1, out);
      carry = last + 1 < chunk.length ? [chunk.subarray(last + 1)] : [];
      return out;
    },
    /** The last batches: the file's last line when it has no line end (it may complete one), and the partial one. */
    end(): LogBatch[] {
      const out: LogBatch[] = [];
      if (carry.length) pushText(Buffer.concat(carry).toString('utf8'), out);
      carry = [];
      const last = cut();
      if (last) out.push(last);
      return out;
    },
  };
}
const NEWLINE = Buffer.from('\n');
