import type { BodyPolicy } from '../http/body-policy.ts';
import {
  bearerMatches,
  header,
  HttpProblem,
  json,
  parseJson,
  queryOf,
  validate,
  type Idempotency,
  type RouteAnswer,
  type RouteRequest,
} from '../http/index.ts';
import { CdnLogBatchSchema, INGEST_MAX_LINES, type IngestResult } from '../schemas/ingest.ts';
import type { IdempotencyStore } from '../store/types.ts';
import { parseBatch } from '../telemetry/log-formats/parse.ts';
import { FORMATS, type LogFormat, type LogLine } from '../telemetry/log-formats/types.ts';

/** Media types the ingest route reads: JSON (a batch object or a drain's array), NDJSON, plain log text. */
export const INGEST_MEDIA_TYPES = ['application/json', 'application/x-ndjson', 'text/plain'];
/** Largest ingest body by default: 4 MiB (INGEST_BATCH_BYTES). */
export const INGEST_BATCH_BYTES = 4 * 1024 * 1024;

/** The body rules of the ingest route: the media types above, up to `limit` bytes. */
export const logBatchBody = (limit: number): BodyPolicy => ({
  limit: () => limit,
  accepts: INGEST_MEDIA_TYPES,
  allows: (t) => INGEST_MEDIA_TYPES.includes(t) || t.endsWith('+json'),
});

export interface LogIngestOptions {
  /** INGEST_TOKEN; the route answers 404 without one. */
  token: string | undefined;
  /** Counts normalised lines into the ledger (Telemetry.ingest); lines dated outside its range are only counted as such. */
  count: (lines: LogLine[]) => { counted: number; outOfRange: number };
  /** Replays the first answer of a repeated batch key (Idempotency-Key), across processes on PostgreSQL. */
  idempotency: Idempotency;
  /** Where that answer is kept. */
  records: IdempotencyStore;
}

function formatParam(request: RouteRequest): LogFormat | undefined {
  const raw = queryOf(request).get('format');
  if (raw === null || raw === '' || raw === 'auto') return undefined;
  if (!(FORMATS as readonly string[]).includes(raw))
    throw new HttpProblem(
      'INVALID_QUERY',
      `format must be one of ${FORMATS.join(', ')} (or left out to recognise it).`,
    );
  return raw as LogFormat;
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** The records of a request body and their declared format. */
function recordsOf(request: RouteRequest): {
  records: (string | Record<string, unknown>)[];
  format: LogFormat | undefined;
} {
  const declared = formatParam(request);
  const type = (header(request, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'text/plain' || type === 'application/x-ndjson') {
    const records = utf8.decode(request.body).split('\n');
    if (records.at(-1) === '') records.pop();
    if (records.length === 0) throw new HttpProblem('VALIDATION_FAILED', 'The body holds no log line.');
    if (records.length > INGEST_MAX_LINES)
      throw new HttpProblem('BATCH_TOO_LARGE', `A batch holds at most ${INGEST_MAX_LINES} lines; send more batches.`, {
        extra: { limit: INGEST_MAX_LINES },
      });
    return { records: records.map((r) => (r.endsWith('\r') ? r.slice(0, -1) : r)), format: declared };
  }
  const body = parseJson(request.body);
  // A drain (Vercel) posts a bare JSON array of records.
  const batch = validate(CdnLogBatchSchema, Array.isArray(body) ? { lines: body } : body);
  return { records: batch.lines, format: batch.format ?? declared };
}

/**
 * POST /api/telemetry/ingest: log records of any supported format into the bot ledger. Client
 * addresses are verified as a live request's and never stored. A batch sent again with the same
 * Idempotency-Key (the batch key `npm run ingest-logs` sends) replays the first answer and counts nothing.
 */
export function createLogIngest(options: LogIngestOptions) {
  return async function ingestLogs(request: RouteRequest): Promise<RouteAnswer> {
    if (!options.token) throw new HttpProblem('NOT_FOUND', 'Log ingest is not configured (INGEST_TOKEN).');
    if (!bearerMatches(request, options.token))
      throw new HttpProblem('INGEST_TOKEN_REQUIRED', 'Send Authorization: Bearer <INGEST_TOKEN>.');
    const { records, format } = recordsOf(request);
    const key = header(request, 'idempotency-key') ?? null;
    const answer = await options.idempotency('telemetry.ingest', key, request.body, async (keep) => {
      const parsed = parseBatch(records, format);
      const { counted, outOfRange } = options.count(parsed.lines);
      const result: IngestResult = { accepted: parsed.lines.length, counted, outOfRange, skipped: parsed.skipped };
      const answer = { status: 202, body: result };
      // The ledger lives in memory and cannot take part in a store write: the batch key is kept
      // right after counting, so a repeated batch replays this answer instead of counting again.
      const record = keep?.(answer);
      if (record) await options.records.put(record);
      return answer;
    });
    return json(answer.status, answer.body, answer.replayed ? { 'Idempotent-Replayed': 'true' } : {});
  };
}
