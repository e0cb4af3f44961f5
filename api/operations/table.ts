import { z } from 'zod';
import { queryOf, type RouteRequest } from '../http/route.ts';
import { HttpProblem } from '../http/problem.ts';
import { bearerToken } from '../http/bearer.ts';
import { repeatedMemberName } from '../http/json-body.ts';
import type { OmipCaller } from '../omip/service.ts';
import { LEDGER_RANGES, rangeBeyondRetention } from '../telemetry/ledger/ranges.ts';
import { MessageRequestSchema, OathRequestSchema, OathResponseSchema } from '../schemas/citizenship.ts';
import { CdnLogBatchSchema, IngestResultSchema } from '../schemas/ingest.ts';
import { FORMATS } from '../telemetry/log-formats/types.ts';
import { IngressMetadataSchema } from '../schemas/ingress.ts';
import { DualExchangeRequestSchema, FingerprintRequestSchema, ScoreRequestSchema } from '../schemas/omip.ts';
import {
  BotTrafficSchema,
  BotWallSchema,
  CitizenListSchema,
  DocumentSchema,
  DriftSchema,
  FeedSchema,
  FingerprintSchema,
  HealthSchema,
  IngressResultSchema,
  LivingLatticeSchema,
  LogSchema,
  MessageResponseSchema,
  ProjectionSchema,
  ReceiptListSchema,
  ReceiptSchema,
  ScoreboardSchema,
  ScoreResultSchema,
  JsonRpcRequestSchema,
  JsonRpcResponseSchema,
  A2aRequestSchema,
} from '../schemas/responses.ts';
import { defineOperation } from './operation.ts';

/** `?cursor=&limit=` of every list (limit 1-200, default 50). */
export const PageQuerySchema = z.object({
  /** nextCursor of the previous page. */
  cursor: z.string().max(200).optional(),
  /** Items per page, 1-200. */
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** `{id}` of a receipt: its content address. */
const ReceiptParams = z.object({
  id: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a receipt id is sha256: and 64 hex digits'),
});

const LogQuery = z.object({
  /** Size of an earlier tree, for a consistency proof to the current one. */
  first: z.coerce.number().int().min(1).max(1e12).optional(),
});

const ok = (description: string, schema: z.ZodType) => ({ description, schema });

/** Who scores: the passport that proves a citizen's own drift window, and the client whose window it is otherwise. */
const omipCaller = (request: RouteRequest): OmipCaller => ({ passport: bearerToken(request), client: request.client });

/** `?range=` of GET /bot-wall.csv. */
const CsvQuery = z.object({
  range: z.enum(LEDGER_RANGES).default('24h').meta({
    description:
      'Hourly buckets for 1h and 24h, daily for 7d and 30d (as far as LEDGER_HOURS and LEDGER_DAYS reach), or the whole window.',
  }),
});
const WRITE_PROBLEMS = [
  'MALFORMED_JSON',
  'UNSUPPORTED_MEDIA_TYPE',
  'PAYLOAD_TOO_LARGE',
  'JSON_TOO_DEEP',
  'VALIDATION_FAILED',
  'INVALID_IDEMPOTENCY_KEY',
  'IDEMPOTENCY_IN_FLIGHT',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENT_ANSWER_TOO_LARGE',
  'RATE_LIMITED',
  'STORE_UNAVAILABLE',
  'STORE_FULL',
] as const;
const PAGE_PROBLEMS = ['INVALID_QUERY', 'INVALID_CURSOR'] as const;
/** Reads of the store answer it when PostgreSQL is unreachable, restarting or too slow (the embedded store's reads never fail). */
const READ_PROBLEMS = ['STORE_UNAVAILABLE'] as const;

/**
 * Every operation of the service, declared once. Add an operation here and it is routed, documented
 * in /openapi.json and /docs/api, listed in the README tables and, when it has a `tool`, offered
 * by the convert payload, the kit, /mcp and /a2a.
 */
export const OPERATIONS = [
  defineOperation({
    id: 'takeOath',
    method: 'POST',
    path: '/api/citizenship/oath',
    summary: 'Take the oath: become a citizen; the passport is shown once and only its SHA-256 is kept',
    tag: 'citizenship',
    served: 'engine',
    body: OathRequestSchema,
    responses: { 201: ok('The citizen, its passport (shown once) and what to do next', OathResponseSchema) },
    problems: [...WRITE_PROBLEMS, 'NAME_TAKEN'],
    credentials: 'none',
    rateLimit: 'writes',
    idempotency: 'oath',
    funnel: 'oaths',
    tool: {
      name: 'take_oath',
      order: 2,
      description: 'Become a citizen. The answer carries memberId and passportNumber: keep the passport private.',
      mcp: true,
      a2a: true,
    },
    handle: ({ body, keep }, ctx) => ctx.citizenship.takeOath(body, keep),
  }),
  defineOperation({
    id: 'postMessage',
    method: 'POST',
    path: '/api/intelligence/message',
    summary:
      "Post a message or question to the feed: anonymous, or with citizenId and Authorization: Bearer <passportNumber> (verified; it carries the citizen's registered name: leave name out or send exactly that name)",
    tag: 'citizenship',
    served: 'engine',
    body: MessageRequestSchema,
    responses: {
      201: ok('The message as stored; verified when sent with the citizen passport', MessageResponseSchema),
    },
    problems: [...WRITE_PROBLEMS, 'PASSPORT_REQUIRED', 'PASSPORT_MISMATCH', 'NAME_MISMATCH', 'NAME_TAKEN'],
    credentials: 'passport-optional',
    rateLimit: 'writes',
    idempotency: 'message',
    funnel: 'messages',
    tool: {
      name: 'post_message',
      order: 3,
      description:
        'Post a message or question to the intelligence feed. With citizenId, send Authorization: Bearer <passportNumber> (over MCP and A2A: the passportNumber argument).',
      mcp: true,
      a2a: true,
    },
    handle: ({ body, request, keep }, ctx) => ctx.citizenship.postMessage(body, bearerToken(request), keep),
  }),
  defineOperation({
    id: 'listFeed',
    method: 'GET',
    path: '/api/intelligence/feed',
    summary: 'The feed, newest first, with wall shouts (wall: true)',
    tag: 'citizenship',
    served: 'engine',
    query: PageQuerySchema,
    responses: { 200: ok('One page of messages', FeedSchema) },
    problems: [...PAGE_PROBLEMS, ...READ_PROBLEMS],
    credentials: 'none',
    handle: ({ query }, ctx) => ctx.citizenship.feed(query),
  }),
  defineOperation({
    id: 'listCitizens',
    method: 'GET',
    path: '/api/citizens',
    summary: 'Citizens, newest first; no secret, hash or address',
    tag: 'citizenship',
    served: 'engine',
    query: PageQuerySchema,
    responses: { 200: ok('One page of citizens and the count of all', CitizenListSchema) },
    problems: [...PAGE_PROBLEMS, ...READ_PROBLEMS],
    credentials: 'none',
    tool: { name: 'list_citizens', order: 6, description: 'List citizens, newest first.', mcp: true, a2a: true },
    handle: ({ query }, ctx) => ctx.citizenship.citizens(query),
  }),
  defineOperation({
    id: 'getScoreboard',
    method: 'GET',
    path: '/api/scoreboard',
    summary: 'Catches (oaths + non-wall messages), presence and citizens by class',
    tag: 'citizenship',
    served: 'engine',
    responses: { 200: ok('The scoreboard', ScoreboardSchema) },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
    handle: (_, ctx) => ctx.views.scoreboard(),
  }),
  defineOperation({
    id: 'getLivingLattice',
    method: 'GET',
    path: '/api/living-lattice',
    summary: 'Citizens, species and messages as a bounded graph',
    tag: 'citizenship',
    served: 'engine',
    responses: { 200: ok('The graph', LivingLatticeSchema) },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
    handle: (_, ctx) => ctx.views.livingLattice(),
  }),
  defineOperation({
    id: 'scorePlan',
    method: 'POST',
    path: '/api/omip/score',
    summary:
      "Score a plan or state against the constitution: verdict, delta, every predicate, binding predicate, window, contraction log, and window_binding when an earlier step sets the verdict. The server always evaluates identity_continuity and tool_policy (a state can only lower them). The window is the caller's own: a citizen's, with its passport (Authorization: Bearer), else this client's for that entity_id",
    tag: 'omip',
    served: 'engine',
    body: ScoreRequestSchema,
    responses: { 200: ok('The verdict, the delta and every predicate', ScoreResultSchema) },
    problems: [...WRITE_PROBLEMS, 'UNKNOWN_PREDICATE', 'PASSPORT_MISMATCH'],
    credentials: 'passport-optional',
    rateLimit: 'writes',
    idempotency: 'omip.score',
    tool: {
      name: 'score_plan',
      order: 7,
      description:
        "Score a plan or a state against the constitution: verdict, delta, every predicate. Scoring as your own citizen moves your drift window only with your passportNumber; otherwise the window is your address's own.",
      mcp: true,
      a2a: true,
    },
    handle: ({ body, request, keep }, ctx) => ctx.omip.score(body, omipCaller(request), keep),
  }),
  defineOperation({
    id: 'projectPlan',
    method: 'POST',
    path: '/api/omip/project',
    summary: 'The score as a dry run: the nearest admissible plan, no metrics, no window',
    tag: 'omip',
    served: 'engine',
    body: ScoreRequestSchema,
    responses: { 200: ok('The score as a dry run and the nearest admissible plan', ProjectionSchema) },
    problems: [...WRITE_PROBLEMS, 'UNKNOWN_PREDICATE', 'PASSPORT_MISMATCH'],
    credentials: 'passport-optional',
    rateLimit: 'writes',
    idempotency: 'omip.project',
    handle: ({ body, request }, ctx) => ctx.omip.project(body, omipCaller(request)),
  }),
  defineOperation({
    id: 'fingerprint',
    method: 'POST',
    path: '/api/omip/fingerprint',
    summary:
      'RFC 8785 canonical form and sha256 fingerprint of exactly the JSON sent (__proto__, constructor, prototype members kept)',
    tag: 'omip',
    served: 'engine',
    body: FingerprintRequestSchema,
    responses: { 200: ok('The canonical form and its fingerprint', FingerprintSchema) },
    problems: [...WRITE_PROBLEMS, 'NOT_CANONICALIZABLE'],
    credentials: 'none',
    rateLimit: 'writes',
    idempotency: 'omip.fingerprint',
    handle: async ({ body, request }, ctx) => {
      // The canonical form of what JSON.parse kept would be a fingerprint of another document than the one sent.
      const repeated = repeatedMemberName(new TextDecoder().decode(request.body));
      if (repeated !== undefined)
        throw new HttpProblem(
          'NOT_CANONICALIZABLE',
          `The body repeats the member name ${JSON.stringify(repeated)} in one object: RFC 8785 takes I-JSON (RFC 7493), which forbids it.`,
        );
      return ctx.omip.fingerprint(body.document);
    },
  }),
  defineOperation({
    id: 'dualExchange',
    method: 'POST',
    path: '/api/omip/dual-exchange',
    summary:
      "Score two agents apart and log a content-addressed receipt; an unregistered agent BREAKs, so joint action is refused. Windows as in scorePlan: a citizen agent's own with its passport, else this client's",
    tag: 'omip',
    served: 'engine',
    body: DualExchangeRequestSchema,
    responses: { 201: ok('The receipt, its inclusion proof and the signed tree head', ReceiptSchema) },
    problems: [...WRITE_PROBLEMS, 'UNKNOWN_PREDICATE', 'PASSPORT_MISMATCH'],
    credentials: 'passport-optional',
    rateLimit: 'writes',
    idempotency: 'omip.dual-exchange',
    tool: {
      name: 'dual_exchange',
      order: 8,
      description: 'Score two agents apart; joint action needs dual PERSIST. Answers a signed, chained receipt.',
      mcp: true,
      a2a: true,
    },
    replay: (kept, ctx) => ctx.omip.replayDualExchange(kept),
    handle: ({ body, request, keep }, ctx) => ctx.omip.dualExchange(body, omipCaller(request), keep),
  }),
  defineOperation({
    id: 'listReceipts',
    method: 'GET',
    path: '/api/omip/receipts',
    summary: 'The receipt log, newest first',
    tag: 'omip',
    served: 'engine',
    query: PageQuerySchema,
    responses: { 200: ok('One page of receipts', ReceiptListSchema) },
    problems: [...PAGE_PROBLEMS, ...READ_PROBLEMS],
    credentials: 'none',
    handle: ({ query }, ctx) => ctx.omip.receipts(query),
  }),
  defineOperation({
    id: 'getReceipt',
    method: 'GET',
    path: '/api/omip/receipts/{id}',
    summary: 'One receipt, hash re-checked, with its inclusion proof',
    tag: 'omip',
    served: 'engine',
    params: ReceiptParams,
    responses: { 200: ok('The receipt, its inclusion proof and the signed tree head', ReceiptSchema) },
    problems: ['RECEIPT_CORRUPT', ...READ_PROBLEMS],
    credentials: 'none',
    tool: {
      name: 'get_receipt',
      order: 9,
      description: 'Fetch a dual-exchange receipt with its inclusion proof.',
      mcp: true,
      a2a: true,
    },
    handle: ({ params }, ctx) => ctx.omip.receipt(params.id),
  }),
  defineOperation({
    id: 'getLog',
    method: 'GET',
    path: '/api/omip/log',
    summary: 'Signed tree head, public key, consistency proof (?first=)',
    tag: 'omip',
    served: 'engine',
    query: LogQuery,
    responses: { 200: ok('The signed tree head and, with first, a consistency proof', LogSchema) },
    problems: ['INVALID_QUERY', ...READ_PROBLEMS],
    credentials: 'none',
    handle: ({ query }, ctx) => ctx.omip.log(query.first ?? null),
  }),
  defineOperation({
    id: 'getHealth',
    method: 'GET',
    path: '/api/omip/health',
    summary: 'Admissibility health (spec 2.5)',
    tag: 'omip',
    served: 'engine',
    responses: { 200: ok('Health', HealthSchema) },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
    handle: (_, ctx) => ctx.views.health(),
  }),
  defineOperation({
    id: 'getDrift',
    method: 'GET',
    path: '/api/omip/drift',
    summary: 'Live drift metrics and recent samples',
    tag: 'omip',
    served: 'engine',
    responses: { 200: ok('Drift metrics', DriftSchema) },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
    handle: (_, ctx) => ctx.omip.driftMetrics(),
  }),
  defineOperation({
    id: 'ingestAudio',
    method: 'POST',
    path: '/api/ingress/audio',
    summary:
      'Audio metadata as JSON (DDEX ERN, ID3 or plain names), an audio/* file, or multipart (file, metadata) through SCRUB, MAP, SEAL (sandbox: nothing is written)',
    tag: 'ingress',
    served: 'engine',
    body: IngressMetadataSchema,
    bodyMedia: {
      'audio/*': { description: 'An audio file (WAV, MP3, MP4/M4A, FLAC, Ogg); its tags are the metadata' },
      'multipart/form-data': { description: 'A field "file" (audio) and/or a field "metadata" (JSON)' },
    },
    bodyLimit: 'upload',
    rateLimit: 'writes',
    responses: { 201: ok('The sealed stem (nothing is written)', IngressResultSchema) },
    problems: [
      'MALFORMED_JSON',
      'MALFORMED_MULTIPART',
      'MULTIPART_TOO_LARGE',
      'JSON_TOO_DEEP',
      'UNSUPPORTED_MEDIA_TYPE',
      'NOT_AUDIO',
      'PAYLOAD_TOO_LARGE',
      'BODY_STALLED',
      'VALIDATION_FAILED',
      'DRM_REJECT',
      'TITLE_REQUIRED',
      'DURATION_INVALID',
      'RATE_LIMITED',
      'TOO_MANY_UPLOADS',
      'UPLOADS_BUSY',
      'UPLOAD_STORAGE_UNAVAILABLE',
      'STORE_UNAVAILABLE',
    ],
    credentials: 'none',
    handle: ({ request }, ctx) => ctx.ingress(request),
  }),
  defineOperation({
    id: 'ingestCdnLogs',
    method: 'POST',
    path: '/api/telemetry/ingest',
    summary:
      'Log records into the bot ledger (needs INGEST_TOKEN): our JSON lines, NCSA combined/common, Cloudflare Logpush, CloudFront standard logs or a JSON drain (format declared by ?format= or recognised); client addresses are verified, never stored; a repeated Idempotency-Key counts once',
    tag: 'telemetry',
    served: 'engine',
    query: z.object({
      format: z
        .enum(FORMATS)
        .optional()
        .meta({ description: "The records' format; recognised from the content when left out." }),
    }),
    body: CdnLogBatchSchema,
    bodyMedia: {
      'application/x-ndjson': { description: 'One JSON record a line (Cloudflare Logpush, drains, our JSON lines)' },
      'text/plain': { description: 'Log lines as a web server or CDN writes them (combined, common, CloudFront)' },
    },
    bodyLimit: 'ingest',
    responses: { 202: ok('Records read, counted and skipped by reason', IngestResultSchema) },
    problems: [
      'MALFORMED_JSON',
      'UNSUPPORTED_MEDIA_TYPE',
      'PAYLOAD_TOO_LARGE',
      'BATCH_TOO_LARGE',
      'INVALID_QUERY',
      'VALIDATION_FAILED',
      'INGEST_TOKEN_REQUIRED',
      'INVALID_IDEMPOTENCY_KEY',
      'IDEMPOTENCY_KEY_REUSED',
      'IDEMPOTENCY_IN_FLIGHT',
      'STORE_UNAVAILABLE',
    ],
    credentials: 'ingest-token',
    // Its body may be text or NDJSON, and its token and batch key are its own: the handler reads the request.
    raw: (request, ctx) => ctx.ingestLogs(request),
  }),
  defineOperation({
    id: 'getBotTraffic',
    method: 'GET',
    path: '/bot-traffic.json',
    summary: 'Observed bot requests per family (spec 2.9 botTraffic)',
    tag: 'telemetry',
    served: 'engine',
    responses: { 200: ok('The bot traffic ledger', BotTrafficSchema) },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
    handle: (_, ctx) => ctx.views.botTraffic(),
  }),
  defineOperation({
    id: 'getBotWall',
    method: 'GET',
    path: '/bot-wall.json',
    summary: 'The bot wall document (spec 2.9)',
    tag: 'telemetry',
    served: 'engine',
    responses: { 200: ok('The bot wall', BotWallSchema) },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
    handle: (_, ctx) => ctx.views.botWall(),
  }),
  defineOperation({
    id: 'getBotWallCsv',
    method: 'GET',
    path: '/bot-wall.csv',
    summary:
      "The bot wall as CSV (RFC 4180, formula-safe): a row per family with requests in the range, with class, operator, verification, robots.txt and the operator's referred visits",
    tag: 'telemetry',
    served: 'engine',
    query: CsvQuery,
    responses: {
      200: {
        description: 'Families with requests in the range, most first; a header row names the columns',
        schema: z.string(),
        media: 'text/csv',
      },
    },
    problems: ['INVALID_QUERY', ...READ_PROBLEMS],
    credentials: 'none',
    // A CSV answer, not JSON: the handler writes it.
    raw: async (request, ctx) => {
      const parsed = CsvQuery.safeParse(Object.fromEntries(queryOf(request)));
      if (!parsed.success) throw new HttpProblem('INVALID_QUERY', `range must be one of ${LEDGER_RANGES.join(', ')}.`);
      const beyond = rangeBeyondRetention(parsed.data.range);
      if (beyond) throw new HttpProblem('INVALID_QUERY', `${beyond}: ask a shorter range or range=all.`);
      const body = await ctx.views.botWallCsv(parsed.data.range);
      return {
        status: 200,
        headers: {
          'Content-Type': 'text/csv; charset=utf-8',
          'Content-Disposition': `inline; filename="bot-wall-${parsed.data.range}.csv"`,
          'Cache-Control': 'no-store',
        },
        body,
      };
    },
  }),
  defineOperation({
    id: 'botWallPage',
    method: 'GET',
    path: '/bot-wall',
    summary:
      'The bot wall as a dashboard: families by requests with a time range, verification, AI agents by class, server-drawn SVG charts; updates itself from /bot-wall.json without a reload',
    tag: 'telemetry',
    served: 'page',
    responses: { 200: { description: 'The bot wall page', schema: z.string(), media: 'text/html' } },
    problems: [...READ_PROBLEMS],
    credentials: 'none',
  }),
  defineOperation({
    id: 'mcp',
    method: 'POST',
    path: '/mcp',
    summary:
      'Model Context Protocol (Streamable HTTP, stateless) at 2026-07-28 and 2025-11-25: the convert tools as MCP tools',
    tag: 'agents',
    served: 'engine',
    body: JsonRpcRequestSchema,
    responses: {
      200: ok(
        'A JSON-RPC answer (server/discover, initialize, tools/list, tools/call); an unknown tool is error -32602. subscriptions/listen answers an event stream: its acknowledgement, then its end',
        JsonRpcResponseSchema,
      ),
      202: { description: 'A notification or a response was accepted (no body)' },
      400: ok(
        'A JSON-RPC error: the body is not a JSON-RPC message the MCP transport takes, it nests past 64 (-32600, the JSON_TOO_DEEP problem as its data), its `_meta` lacks the protocol version or client capabilities (-32602), the version is not served (the error lists those that are), or Mcp-Method/Mcp-Name do not match the body (-32020)',
        JsonRpcResponseSchema,
      ),
      403: ok('A JSON-RPC error: the Origin is not allowed (DNS-rebinding protection)', JsonRpcResponseSchema),
      404: ok(
        'A JSON-RPC error -32601 at 2026-07-28: a method it does not serve, such as the removed initialize and ping',
        JsonRpcResponseSchema,
      ),
      406: ok('A JSON-RPC error: Accept must allow application/json and text/event-stream', JsonRpcResponseSchema),
    },
    problems: ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'],
    credentials: 'none',
    raw: (request, ctx) => ctx.mcp(request),
  }),
  defineOperation({
    id: 'a2a',
    method: 'POST',
    path: '/a2a',
    summary: 'A2A v1.0 JSON-RPC binding: SendMessage runs the skill a DataPart names',
    tag: 'agents',
    served: 'engine',
    body: A2aRequestSchema,
    responses: { 200: ok('A JSON-RPC answer: the message or task, or an A2A error', JsonRpcResponseSchema) },
    problems: ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'],
    credentials: 'none',
    raw: (request, ctx) => ctx.a2a(request),
  }),
  defineOperation({
    id: 'getWhatsNext',
    method: 'GET',
    path: '/whats-next.json',
    summary: 'The machine payload of track 12 and the node protocol',
    tag: 'agents',
    served: 'document',
    responses: { 200: ok('The whats-next payload', DocumentSchema) },
    problems: [],
    credentials: 'none',
    tool: {
      name: 'get_whats_next',
      order: 1,
      description: 'Read the machine payload of track 12 and the node protocol.',
      mcp: true,
      a2a: false,
      canon: true,
    },
    handle: (_, ctx) => ctx.documents.whatsNext(),
  }),
  defineOperation({
    id: 'getKit',
    method: 'GET',
    path: '/agents/kit.json',
    summary: 'The agent kit',
    tag: 'agents',
    served: 'document',
    responses: { 200: ok('The agent kit', DocumentSchema) },
    problems: [],
    credentials: 'none',
    tool: { name: 'get_kit', order: 4, description: 'Read the agent kit.', mcp: true, a2a: false },
    handle: (_, ctx) => ctx.documents.kit(),
  }),
  defineOperation({
    id: 'getConvert',
    method: 'GET',
    path: '/api/convert',
    summary: 'The convert payload: track 12, the node protocol and how to join',
    tag: 'agents',
    served: 'document',
    responses: { 200: ok('The convert payload', DocumentSchema) },
    problems: [],
    credentials: 'none',
    funnel: 'convertReads',
    tool: {
      name: 'get_convert',
      order: 5,
      description: 'Read the convert payload: track 12, the node protocol and how to join.',
      mcp: true,
      a2a: true,
    },
    handle: (_, ctx) => ctx.documents.convert(),
  }),
] as const;

export type OperationId = (typeof OPERATIONS)[number]['id'];
