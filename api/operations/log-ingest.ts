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
import {
  splitLines,
  type BatchAgents,
  type BatchRecords,
  type ParsedWithAgents,
} from '../telemetry/log-formats/parse-pool.ts';
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
  count: (lines: LogLine[], agents?: BatchAgents) => { counted: number; outOfRange: number };
  /** Reads a batch's records (a pool of worker threads, createParsePool); parseBatch in this thread when left out. */
  parse?: (records: BatchRecords, format: LogFormat | undefined) => Promise<ParsedWithAgents>;
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

/** The records of a request body and their declared format; a text body's records as its lines' bytes, split where they are read. */
function recordsOf(request: RouteRequest): {
  records: (string | Record<string, unknown>)[] | Uint8Array;
  format: LogFormat | undefined;
} {
  const declared = formatParam(request);
  const type = (header(request, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'text/plain' || type === 'application/x-ndjson') {
    // Lines counted on the bytes (as splitLines will cut them): the limit holds before anything is decoded.
    const body = request.body;
    let lines = 0;
    for (let i = body.indexOf(10); i !== -1; i = body.indexOf(10, i + 1)) lines++;
    if (body.length > 0 && body[body.length - 1] !== 10) lines++;
    if (lines === 0) throw new HttpProblem('VALIDATION_FAILED', 'The body holds no log line.');
    if (lines > INGEST_MAX_LINES)
      throw new HttpProblem('BATCH_TOO_LARGE', `A batch holds at most ${INGEST_MAX_LINES} lines; send more batches.`, {
        extra: { limit: INGEST_MAX_LINES },
      });
    return { records: body, format: declared };
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
  const parse: NonNullable<LogIngestOptions['parse']> =
    options.parse ?? (async (records, format) => parseBatch(splitLines(records), format));
  // Batches are counted in the order they arrived, whichever thread finished reading first: the
  // ledger's bounded rows and recent requests come out as a single thread would leave them.
  let turn: Promise<unknown> = Promise.resolve();
  return async function ingestLogs(request: RouteRequest): Promise<RouteAnswer> {
    if (!options.token) throw new HttpProblem('NOT_FOUND', 'Log ingest is not configured (INGEST_TOKEN).');
    if (!bearerMatches(request, options.token))
      throw new HttpProblem('INGEST_TOKEN_REQUIRED', 'Send Authorization: Bearer <INGEST_TOKEN>.');
    const { records, format } = recordsOf(request);
    const key = header(request, 'idempotency-key') ?? null;
    const answer = await options.idempotency('telemetry.ingest', key, request.body, async (keep) => {
      const reading = parse(records, format);
      const counting = turn.then(async () => {
        const parsed = await reading;
        return { parsed, ...options.count(parsed.lines, parsed.agents) };
      });
      turn = counting.catch(() => undefined);
      const { parsed, counted, outOfRange } = await counting;
      const result: IngestResult = {
        accepted: parsed.accepted ?? parsed.lines.length,
        counted,
        outOfRange,
        skipped: parsed.skipped,
      };
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
