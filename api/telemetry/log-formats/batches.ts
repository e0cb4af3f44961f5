import { createHash } from 'node:crypto';
import { MAX_RECORD_CHARS } from './parse.ts';

/** One batch of a log file as `npm run ingest-logs` sends it. */
export interface LogBatch {
  /** Line number (1-based) of the batch's first record in its file. */
  firstLine: number;
  /** Records, with the W3C directives (CloudFront's #Fields:) that govern them in front. */
  body: string;
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

/**
 * Cuts a stream of log lines into batches at fixed record counts (or sooner by size), so batch
 * boundaries, and so batch keys, depend only on the file's content.
 */
export function createBatcher({ maxLines, maxBytes }: BatcherOptions) {
  let directives: string[] = [];
  let lines: string[] = [];
  let bytes = 0;
  let firstLine = 0;
  let lineNo = 0;

  function cut(): LogBatch | null {
    if (lines.length === 0) return null;
    const head = directives.length ? `${directives.join('\n')}\n` : '';
    const body = `${head}${lines.join('\n')}\n`;
    const key = createHash('sha256').update(`${firstLine}\n`).update(body).digest('base64url');
    const batch = { firstLine, body, records: lines.length, key: `log-${key}` };
    lines = [];
    bytes = 0;
    return batch;
  }

  return {
    /** Adds one line; returns the batches it completed (most often none). */
    push(raw: string): LogBatch[] {
      lineNo++;
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line.trim() === '') return [];
      // A W3C directive governs the lines after it: a new #Fields: ends the batch before it.
      if (line.startsWith('#')) {
        const done = cut();
        directives = /^#(Version|Fields):/.test(line)
          ? [...directives.filter((d) => !d.startsWith(line.slice(0, line.indexOf(':') + 1))), line]
          : directives;
        return done ? [done] : [];
      }
      // A record too long to read is sent cut short: the server skips it as too-long.
      const record = line.length > MAX_RECORD_CHARS ? line.slice(0, MAX_RECORD_CHARS + 1) : line;
      const size = Buffer.byteLength(record) + 1;
      const done = lines.length > 0 && bytes + size > maxBytes ? cut() : null;
      if (lines.length === 0) firstLine = lineNo;
      lines.push(record);
      bytes += size;
      const full = lines.length >= maxLines ? cut() : null;
      return [done, full].filter((b) => b !== null);
    },
    /** The last, partial batch. */
    end: (): LogBatch | null => cut(),
  };
}
