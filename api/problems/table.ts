/**
 * Every problem code this service answers, in one table (as fastify's lib/errors.js): the status,
 * the title, when it is sent, and the headers it always carries. OpenAPI, the README and the edge
 * that turns domain errors into HTTP read it; `HttpProblem` only takes a code listed here.
 */
export const PROBLEMS = {
  BAD_PATH: {
    status: 400,
    title: 'Bad path',
    when: 'The path cannot be decoded, leaves the site, or a path parameter fails its pattern; an absolute-form target names another server than its Host.',
  },
  MALFORMED_JSON: { status: 400, title: 'Malformed JSON', when: 'The body is empty, not UTF-8 or not JSON.' },
  MALFORMED_MULTIPART: {
    status: 400,
    title: 'Malformed multipart',
    when: 'A multipart/form-data body cannot be read.',
  },
  INVALID_QUERY: {
    status: 400,
    title: 'Invalid query',
    when: 'A query parameter fails its schema (limit 1-200, first a whole number).',
  },
  INVALID_CURSOR: {
    status: 400,
    title: 'Invalid cursor',
    when: 'The cursor is not a nextCursor this service gave out.',
  },
  INVALID_IDEMPOTENCY_KEY: {
    status: 400,
    title: 'Invalid Idempotency-Key',
    when: 'Idempotency-Key is not unguessable: a random UUID v4, or 128+ random bits as 32+ hex or 22+ base64url characters (the message says how to make one).',
  },
  PASSPORT_REQUIRED: {
    status: 401,
    title: 'Passport required',
    when: 'citizenId is set without Authorization: Bearer <passportNumber>.',
    headers: { 'WWW-Authenticate': 'Bearer realm="citizens"' },
  },
  INGEST_TOKEN_REQUIRED: {
    status: 401,
    title: 'Ingest token required',
    when: 'The ingest route is called without the right Bearer INGEST_TOKEN.',
    headers: { 'WWW-Authenticate': 'Bearer realm="ingest"' },
  },
  METRICS_TOKEN_REQUIRED: {
    status: 401,
    title: 'Metrics token required',
    when: '/metrics is called without the right Bearer METRICS_TOKEN.',
    headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
  },
  PASSPORT_MISMATCH: { status: 403, title: 'Passport mismatch', when: 'The passport does not belong to citizenId.' },
  NOT_FOUND: {
    status: 404,
    title: 'Not found',
    when: 'Nothing is served at the path, the receipt does not exist, or the route is not configured.',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    title: 'Method not allowed',
    when: 'The path takes other methods (Allow lists them; POST routes add an example body).',
  },
  BODY_STALLED: {
    status: 408,
    title: 'Body stalled',
    when: 'No byte of the body arrived for BODY_IDLE_TIMEOUT_MS; the request was dropped.',
  },
  IDEMPOTENCY_IN_FLIGHT: {
    status: 409,
    title: 'Idempotency-Key in use',
    when: 'A request with this Idempotency-Key is still running.',
  },
  NAME_TAKEN: {
    status: 409,
    title: 'Name taken',
    when: "The name looks like a citizen's or the wall's, in any case, width or look-alike letters (UTS #39 skeleton): an oath, or a message without citizenId. heldBy names the holder.",
  },
  MULTIPART_TOO_LARGE: {
    status: 413,
    title: 'Multipart too large',
    when: 'A multipart body has more parts, files or fields, or a larger field, than the route reads.',
  },
  BATCH_TOO_LARGE: {
    status: 413,
    title: 'Batch too large',
    when: 'A log batch holds more than 10,000 records; send more batches.',
  },
  IDEMPOTENT_ANSWER_TOO_LARGE: {
    status: 413,
    title: 'Answer too large to keep',
    when: 'A keyed write would answer more than an Idempotency-Key keeps (16 KiB); nothing was written.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    title: 'Content too large',
    when: 'The body is larger than the route allows (a method that takes no body, GET, HEAD or OPTIONS: any body).',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    title: 'Unsupported media type',
    when: 'Content-Type is not one the route takes.',
  },
  NOT_AUDIO: { status: 415, title: 'Not audio', when: 'An upload cannot be read as WAV, MP3, MP4/M4A, FLAC or Ogg.' },
  AUDIO_TOO_COMPLEX: {
    status: 422,
    title: 'Audio too complex',
    when: 'An upload holds more container elements than AUDIO_MAX_ELEMENTS, or its parse passes AUDIO_PARSE_CPU_MS of CPU.',
  },
  VALIDATION_FAILED: {
    status: 422,
    title: 'Validation failed',
    when: 'The body fails the route schema; errors lists every issue by path.',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    title: 'Idempotency-Key reused',
    when: 'The Idempotency-Key was used with another body.',
  },
  JSON_TOO_DEEP: {
    status: 422,
    title: 'JSON too deep',
    when: 'The JSON body nests arrays and objects deeper than the documented depth.',
  },
  NAME_MISMATCH: {
    status: 422,
    title: 'Name mismatch',
    when: "A verified message names another than its citizen's registered name.",
  },
  NOT_CANONICALIZABLE: {
    status: 422,
    title: 'Not canonicalizable',
    when: 'The document has no RFC 8785 form: a lone surrogate, or a member name repeated in one object (I-JSON).',
  },
  UNKNOWN_PREDICATE: {
    status: 422,
    title: 'Unknown predicate',
    when: 'A state scores a predicate the constitution does not register; errors names each.',
  },
  DRM_REJECT: { status: 422, title: 'DRM rejected', when: 'The audio metadata carries DRM or rights restrictions.' },
  TITLE_REQUIRED: { status: 422, title: 'Title required', when: 'The audio metadata has no title.' },
  DURATION_INVALID: { status: 422, title: 'Duration invalid', when: 'The audio duration is missing or out of range.' },
  RATE_LIMITED: {
    status: 429,
    title: 'Too many requests',
    when: 'The client spent its writes for this minute (Retry-After says when to retry).',
  },
  TOO_MANY_CONNECTIONS: {
    status: 429,
    title: 'Too many connections',
    when: 'This address has more than MAX_CONNECTIONS_PER_CLIENT connections open; the connection is closed after the answer.',
  },
  TOO_MANY_UPLOADS: {
    status: 429,
    title: 'Too many uploads',
    when: 'This address already has UPLOAD_CONCURRENCY_PER_CLIENT uploads in progress.',
  },
  INTERNAL: { status: 500, title: 'Internal error', when: 'The server failed; nothing was changed.' },
  RECEIPT_CORRUPT: { status: 500, title: 'Receipt corrupt', when: 'A stored receipt no longer matches its id.' },
  NOT_IMPLEMENTED: { status: 501, title: 'Not implemented', when: 'The method is not one this server implements.' },
  UPLOADS_BUSY: {
    status: 503,
    title: 'Uploads busy',
    when: 'The server is reading UPLOAD_CONCURRENCY uploads, its most at once (Retry-After says when to retry).',
    headers: { 'Retry-After': '5' },
  },
  UPLOAD_STORAGE_UNAVAILABLE: {
    status: 503,
    title: 'Upload storage unavailable',
    when: "The server's folder for uploads (UPLOAD_TMP_DIR) refuses the file: full, read-only or gone. Nothing was done (Retry-After says when to retry).",
    headers: { 'Retry-After': '30' },
  },
  SHUTTING_DOWN: {
    status: 503,
    title: 'Shutting down',
    when: 'The process is stopping and the request was still unanswered after its grace period (10 s). Retry (another process takes it) with the same Idempotency-Key: a write whose body had arrived whole may have been saved.',
    headers: { 'Retry-After': '5' },
  },
  UPSTREAM_UNAVAILABLE: {
    status: 502,
    title: 'No process answered',
    when: 'Sent by the proxy (deploy/nginx.conf), not the service: no gateway process took the request (all stopped or restarting). Retry after Retry-After.',
    headers: { 'Retry-After': '5' },
  },
  UPSTREAM_TIMEOUT: {
    status: 504,
    title: 'No answer in time',
    when: 'Sent by the proxy (deploy/nginx.conf), not the service: the gateway process did not answer within proxy_read_timeout. A write may have been saved: retry with the same Idempotency-Key.',
    headers: { 'Retry-After': '5' },
  },
  STARTING: {
    status: 503,
    title: 'Starting',
    when: 'The process listens but has not opened its store yet (Retry-After says when to retry).',
    headers: { 'Retry-After': '1' },
  },
  STORE_UNAVAILABLE: {
    status: 503,
    title: 'Store unavailable',
    when: "The embedded store's disk refuses writes (reads still work), or PostgreSQL is unreachable, restarting or too slow (reads too). Nothing was saved, unless the detail says the commit outcome is unknown: then retry with the same Idempotency-Key.",
    headers: { 'Retry-After': '30' },
  },
  STORE_FULL: {
    status: 503,
    title: 'Store full',
    when: 'The embedded store reached its ceiling (EMBEDDED_MAX_BYTES); nothing was saved; reads still work. The way out: move to PostgreSQL (DATABASE_URL).',
  },
} as const satisfies Record<string, ProblemEntry>;

export interface ProblemEntry {
  status: number;
  title: string;
  when: string;
  headers?: Record<string, string>;
}

export type ProblemCode = keyof typeof PROBLEMS;

export const problemEntry = (code: ProblemCode): ProblemEntry => PROBLEMS[code];

/** Problem codes every operation may answer, whatever it is. */
export const SHARED_PROBLEMS = [
  'BAD_PATH',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'INTERNAL',
  'SHUTTING_DOWN',
] as const satisfies readonly ProblemCode[];
