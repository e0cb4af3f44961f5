/** One request as any log format says it, normalised for the ledger. */
export interface LogLine {
  method: string;
  /** Path without the query string. */
  path: string;
  host: string;
  userAgent: string;
  status: number;
  /** When it was served (ISO 8601); absent when the line does not say. */
  time?: string | undefined;
  /** The client's address, used for verification and never stored. */
  clientAddress?: string | undefined;
}

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
