import { cloudFrontReader } from './cloudfront.ts';
import { parseCloudflare } from './cloudflare.ts';
import { parseCombined } from './combined.ts';
import { detectFormat } from './detect.ts';
import { parseDrain } from './drain.ts';
import { parseJsonLine } from './json-line.ts';
import type { LineReader, LogFormat, LogLine, SkipReason } from './types.ts';

/** Longest record read, in characters: longer ones are skipped as `too-long`. */
export const MAX_RECORD_CHARS = 16 * 1024;

/** A fresh reader of a format (CloudFront's keeps the columns its header declared). */
export function readerOf(format: LogFormat): LineReader {
  switch (format) {
    case 'combined':
      return (r) => (typeof r === 'string' ? parseCombined(r) : { skip: 'unparseable' });
    case 'cloudflare':
      return parseCloudflare;
    case 'cloudfront':
      return cloudFrontReader();
    case 'drain':
      return parseDrain;
    case 'json':
      return parseJsonLine;
  }
}

export interface ParsedBatch {
  format: LogFormat | null;
  lines: LogLine[];
  skipped: Partial<Record<SkipReason, number>>;
}

/**
 * Reads a batch of records of one format, declared or recognised from the content. Every record
 * becomes a line or a counted skip reason; nothing in a record can make the batch fail.
 */
export function parseBatch(records: readonly (string | Record<string, unknown>)[], declared?: LogFormat): ParsedBatch {
  const format = declared ?? detectFormat(records);
  const lines: LogLine[] = [];
  const skipped: Partial<Record<SkipReason, number>> = {};
  const skip = (reason: SkipReason) => void (skipped[reason] = (skipped[reason] ?? 0) + 1);
  const read = format ? readerOf(format) : null;
  for (const record of records) {
    if (typeof record === 'string' && record.length > MAX_RECORD_CHARS) {
      skip('too-long');
      continue;
    }
    if (!read) {
      if (typeof record !== 'string' || record.trim() !== '') skip('unparseable');
      continue;
    }
    const parsed = read(record);
    if (parsed === null) continue;
    if ('skip' in parsed) skip(parsed.skip);
    else lines.push(parsed.line);
  }
  return { format, lines, skipped };
}
