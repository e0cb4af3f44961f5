import type { IngestLine } from '../telemetry.ts';
/** One request as any log format says it, normalised for the ledger (the line telemetry counts). */
export type LogLine = IngestLine;

/** Why a record was not counted; reported by count, never fatal. */
export type SkipReason =
  | 'unparseable'
  | 'not-a-request'
  | 'bad-method'
  | 'bad-path'
  | 'bad-status'
  | 'bad-time'
  | 'too-long';

/** A record read: its normalised line, or why it was skipped. */
export type Parsed = { line: LogLine } | { skip: SkipReason };

/** Reads one record of a format; null for lines that hold no record (headers, comments, blanks). */
export type LineReader = (record: string | Record<string, unknown>) => Parsed | null;

export const FORMATS = ['json', 'combined', 'cloudflare', 'cloudfront', 'drain'] as const;
export type LogFormat = (typeof FORMATS)[number];
