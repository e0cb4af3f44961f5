import { FORMATS } from '../../schemas/log-formats.ts';

/**
 * One request a CDN or proxy served, as its log line says. `clientAddress`, when the log has it, is
 * verified exactly as a live request's address (ranges first, reverse DNS bounded) and never stored.
 */
export interface IngestLine {
  method: string;
  path: string;
  host: string;
  userAgent: string;
  status: number;
  /** When it was served (ISO 8601); defaults to the time of ingest. */
  time?: string | undefined;
  clientAddress?: string | undefined;
  /** The Referer, when the log has it (cut to REFERER_MAX_CHARS); only what AI sends back is read from it, never stored. */
  referer?: string | undefined;
  /** utm_source of the request's query, when the log has the query. */
  utmSource?: string | undefined;
}

/** One request as any log format says it, normalised for the ledger (the line telemetry counts). */
export type LogLine = IngestLine;

/** Why a record was not counted; reported by count, never fatal. */
export type SkipReason =
  'unparseable' | 'not-a-request' | 'bad-method' | 'bad-path' | 'bad-status' | 'bad-time' | 'too-long';

/** A record read: its normalised line, or why it was skipped. */
export type Parsed = { line: LogLine } | { skip: SkipReason };

/** Reads one record of a format; null for lines that hold no record (headers, comments, blanks). */
export type LineReader = (record: string | Record<string, unknown>) => Parsed | null;

export { FORMATS };
export type LogFormat = (typeof FORMATS)[number];
