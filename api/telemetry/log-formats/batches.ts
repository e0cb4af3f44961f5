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
 * Longest line read, in bytes (its line end left out). A longer one is never held whole: only its
 * first MAX_LINE_BYTES are kept, and it is sent as its first MAX_RECORD_CHARS + 1 characters, a
 * record the service skips as `too-long`, whatever it begins with (a directive or a blank line too).
 * At least three bytes for each character of a record (UTF-8's most for one UTF-16 unit), so what is
 * sent of such a line is what decoding it whole would have given. nginx's lines are a few hundred bytes.
 */
export const MAX_LINE_BYTES = 64 * 1024;

/**
 * Cuts a log file into batches at fixed record counts (or sooner by size), so batch boundaries,
 * and so batch keys, depend only on the file's content. Lines end at \n, \r\n or a lone \r
 * (readline's rule). Lines are given one by one (`push`) or as the file's raw bytes (`pushBytes`);
 * both give the same batches, byte for byte, as reading the file with readline and pushing its
 * lines did (a line past MAX_LINE_BYTES is measured in bytes: the same for valid UTF-8), and hold
 * at most MAX_LINE_BYTES + 2 bytes of a line whose end has not come.
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
  // The line pushBytes was given the start of and not yet the end: its bytes (a list: a long line is
  // copied once), at most MAX_LINE_BYTES + 2 of them (room for a \r\n); once it is longer, only its
  // first MAX_LINE_BYTES (`overlong`). `pendingCr`: its last byte was a \r, which a \n may follow.
  let carry: Buffer[] = [];
  let carried = 0;
  let overlong = false;
  let pendingCr = false;

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

  /** A record as sent, cut short past MAX_RECORD_CHARS: the server skips it as too-long. */
  function pushRecord(line: string, out: LogBatch[]): void {
    const record = line.length > MAX_RECORD_CHARS ? line.slice(0, MAX_RECORD_CHARS + 1) : line;
    const encoded = Buffer.from(`${record}\n`);
    before(encoded.length, out);
    closeRun();
    parts.push(encoded);
    after(encoded.length, out);
  }

  /** One line of at most MAX_LINE_BYTES, without its line end. */
  function pushLine(line: string, out: LogBatch[]): void {
    lineNo++;
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
    pushRecord(line, out);
  }

  /** A line past MAX_LINE_BYTES, from its first MAX_LINE_BYTES bytes: a record too long to read, whatever it begins with. */
  function pushTooLong(head: Buffer, out: LogBatch[]): void {
    lineNo++;
    pushRecord(head.toString('utf8'), out);
  }

  /** The line `buf[start, stop)` (no line end in it), decoded: only its head when it is past MAX_LINE_BYTES. */
  function pushPiece(buf: Buffer, start: number, stop: number, out: LogBatch[]): void {
    if (stop - start > MAX_LINE_BYTES) pushTooLong(buf.subarray(start, start + MAX_LINE_BYTES), out);
    else pushLine(buf.toString('utf8', start, stop), out);
  }

  /**
   * The lines of `buf[from, end)`, whose last byte ends a line (\n, or a \r no \n follows). A line
   * that is plain (a printable ASCII first byte other than #, not longer than a record may be, valid
   * UTF-8) is taken as bytes, never made a string: the common case, and the cost of reading a file
   * line by line. Any other line goes the way readline's would.
   */
  function pushLines(buf: Buffer, from: number, end: number, out: LogBatch[]): void {
    const valid = isUtf8(buf.subarray(from, end));
    // The next \n and \r at or after `start` (-1: none), each looked for again only once passed: a
    // file whose lines end in one of them alone is read in one pass, not a search to its end a line.
    let nextLf = buf.indexOf(LF, from);
    let nextCr = buf.indexOf(CR, from);
    for (let start = from; start < end;) {
      if (nextLf !== -1 && nextLf < start) nextLf = buf.indexOf(LF, start);
      if (nextCr !== -1 && nextCr < start) nextCr = buf.indexOf(CR, start);
      // The line is buf[start, stop); its end's last byte is at eol: \n, \r\n, or a lone \r.
      let stop = nextLf;
      let eol = nextLf;
      if (nextCr !== -1 && nextCr < end && (nextLf === -1 || nextCr < nextLf)) {
        stop = nextCr;
        eol = nextCr + 1 < end && buf[nextCr + 1] === LF ? nextCr + 1 : nextCr;
      }
      const first = buf[start]!;
      if (valid && stop > start && first > 0x20 && first < 0x7f && first !== HASH && stop - start <= MAX_RECORD_CHARS) {
        lineNo++;
        const size = stop - start + 1;
        before(size, out);
        // Ended by a \n alone: the line and its end are one run of the read.
        const lf = buf[stop] === LF;
        if (run !== buf || runEnd !== start || !lf) {
          closeRun();
          run = buf;
          runStart = start;
        }
        if (lf) runEnd = eol + 1;
        else {
          // The \r is left out: the line and a \n are not contiguous.
          runEnd = stop;
          closeRun();
          parts.push(NEWLINE);
        }
        after(size, out);
      } else pushPiece(buf, start, stop, out);
      start = eol + 1;
    }
  }

  /** Adds bytes of the line not yet ended, keeping at most MAX_LINE_BYTES + 2 of it, or its head once it is past them. */
  function hold(piece: Buffer): void {
    if (piece.length === 0) return;
    pendingCr = piece[piece.length - 1] === CR;
    if (overlong) return;
    if (carried + piece.length <= MAX_LINE_BYTES + 2) {
      carry.push(piece);
      carried += piece.length;
      return;
    }
    // Longer than any line read (whatever line end it has): its head copied, so that the reads it
    // came from can go, and the rest never kept.
    carry = [Buffer.concat([...carry, piece], MAX_LINE_BYTES)];
    carried = MAX_LINE_BYTES;
    overlong = true;
  }

  /** The held line, now ended: by its last bytes (a \n, or a \r no \n follows), or by the file's end. */
  function endHeld(out: LogBatch[], atFileEnd: boolean): void {
    if (overlong) pushTooLong(carry[0]!, out);
    else if (carried > 0) {
      const line = carry.length === 1 ? carry[0]! : Buffer.concat(carry);
      // The file's last line: no line end but perhaps a \r.
      if (atFileEnd) pushPiece(line, 0, line.length - (line[line.length - 1] === CR ? 1 : 0), out);
      else pushLines(line, 0, line.length, out);
    }
    carry = [];
    carried = 0;
    overlong = false;
    pendingCr = false;
  }

  return {
    /** Adds one line (no line end); returns the batches it completed (most often none). */
    push(raw: string): LogBatch[] {
      const out: LogBatch[] = [];
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      // Past MAX_LINE_BYTES, as pushBytes reads it: a record too long to read.
      if (line.length * 3 > MAX_LINE_BYTES && Buffer.byteLength(line) > MAX_LINE_BYTES)
        pushTooLong(Buffer.from(line).subarray(0, MAX_LINE_BYTES), out);
      else pushLine(line, out);
      return out;
    },
    /** Adds the next bytes of a file, lines cut anywhere; returns the batches they completed. */
    pushBytes(chunk: Buffer): LogBatch[] {
      const out: LogBatch[] = [];
      if (chunk.length === 0) return out;
      // A \r that ended the bytes before ended their line, unless this \n follows it.
      if (pendingCr && chunk[0] !== LF) endHeld(out, false);
      const first = firstEnd(chunk);
      if (first === -1) {
        hold(chunk);
        return out;
      }
      // The held line ends here: it is copied once, with its end (at most MAX_LINE_BYTES + 2 bytes);
      // the chunk's own lines are never copied here.
      let from = 0;
      if (carried > 0) {
        hold(chunk.subarray(0, first + 1));
        endHeld(out, false);
        from = first + 1;
      }
      const last = lastEnd(chunk);
      pushLines(chunk, from, last + 1, out);
      hold(chunk.subarray(last + 1));
      return out;
    },
    /** The last batches: the file's last line when it has no line end (it may complete one), and the partial one. */
    end(): LogBatch[] {
      const out: LogBatch[] = [];
      endHeld(out, true);
      const last = cut();
      if (last) out.push(last);
      return out;
    },
    /** Bytes held of a line not yet ended (at most MAX_LINE_BYTES + 2, whatever the file holds). */
    held: (): number => carried,
  };
}
const NEWLINE = Buffer.from('\n');

/** Where the first line end of `buf` is known to end (its \n, or a \r a byte other than \n follows); -1 for none. */
function firstEnd(buf: Buffer): number {
  const lf = buf.indexOf(LF);
  const cr = buf.indexOf(CR);
  if (cr === -1 || (lf !== -1 && lf < cr)) return lf;
  if (cr + 1 < buf.length) return buf[cr + 1] === LF ? cr + 1 : cr;
  // A \r last: the next bytes tell whether it is half of a \r\n.
  return -1;
}

/** Where the last line end of `buf` known to be one ends; -1 for none. A \r last is not known yet. */
function lastEnd(buf: Buffer): number {
  const lf = buf.lastIndexOf(LF);
  const end = buf[buf.length - 1] === CR ? buf.length - 2 : buf.length - 1;
  const cr = end < 0 ? -1 : buf.lastIndexOf(CR, end);
  return Math.max(lf, cr);
}
