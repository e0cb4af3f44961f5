import { z } from 'zod';
import type { Content } from '../content/load.ts';
import { MEDIA_TYPES, type CatalogEntry } from '../documents/catalog.ts';
import { exampleOf } from '../http/route.ts';
import type { AnyOperation } from '../operations/operation.ts';
import { OPERATIONS } from '../operations/table.ts';
import { PROBLEMS, SHARED_PROBLEMS, type ProblemCode } from '../problems/table.ts';
import { apiSchemas } from '../schemas/registry.ts';

type Components = Record<string, unknown>;

/**
 * A tuple of one schema repeated (a receipt's two agents) becomes `items` with `minItems` and
 * `maxItems`: the same rule in the form Spectral, Redocly and Prism read. They take zod's
 * `prefixItems` with `items: false` for an array that allows no items at all.
 */
function repeatedAsItems({
  zodSchema,
  jsonSchema,
}: {
  zodSchema: z.core.$ZodTypes;
  jsonSchema: Record<string, unknown>;
}): void {
  const def = zodSchema._zod.def;
  if (
    def.type !== 'tuple' ||
    def.rest ||
    !def.items.every((item) => item === def.items[0]) ||
    !Array.isArray(jsonSchema.prefixItems)
  )
    return;
  jsonSchema.items = jsonSchema.prefixItems[0];
  delete jsonSchema.prefixItems;
}

/**
 * JSON Schema of a zod schema for an OpenAPI document: named schemas (registry id) go to
 * components.schemas and are referenced from there; unnamed shared parts are inlined, so no
 * generated name (`__schema0`) reaches the document.
 */
function schemaRef(schema: z.ZodType, io: 'input' | 'output', components: Components): object {
  const {
    $schema: _dialect,
    $defs,
    ...root
  } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    metadata: apiSchemas,
    cycles: 'ref',
    reused: 'inline',
    override: repeatedAsItems,
  }) as Record<string, unknown> & { $defs?: Components };
  const relink = (value: unknown): unknown =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/'));
  for (const [name, def] of Object.entries($defs ?? {})) components[name] ??= relink(def);
  return relink(root) as object;
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };

/** The problem codes an operation may answer: the shared ones, its own, and those its credentials and body bring. */
export function problemsOf(op: Pick<AnyOperation, 'method' | 'problems'>): ProblemCode[] {
  const codes = new Set<ProblemCode>([...SHARED_PROBLEMS, ...op.problems]);
  // Every method has a body limit: a GET's is 0.
  codes.add('PAYLOAD_TOO_LARGE');
  if (op.method === 'POST') codes.add('UNSUPPORTED_MEDIA_TYPE');
  return [...codes];
}

/** Parameters of an operation: path and query from its schemas, Idempotency-Key for writes. */
function parametersOf(op: AnyOperation): object[] {
  const out: object[] = [];
  for (const [where, schema] of [
    ['path', op.params],
    ['query', op.query],
  ] as const) {
    if (!(schema instanceof z.ZodObject)) continue;
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
      properties?: Record<string, { description?: string }>;
      required?: string[];
    };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      const { description, ...rest } = prop;
      out.push({
        name,
        in: where,
        ...(where === 'path' || json.required?.includes(name) ? { required: true } : {}),
        schema: rest,
        ...(description ? { description } : {}),
      });
    }
  }
  if (op.idempotency) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      schema: { type: 'string', maxLength: 255, examples: ['1d846cfe-f25f-4405-8d06-a38aae720187'] },
      description:
        'Replays the first answer to the same key and body for 24 hours (Idempotent-Replayed: true); 409 while the first still runs, 422 with another body. ' +
        'The key unlocks the answer it keeps (an oath answer holds the passport), so it must be unguessable: a random UUID v4, or 128+ random bits as 32+ hex or 22+ base64url characters; anything else is 400 INVALID_IDEMPOTENCY_KEY. ' +
        'An answer larger than 16 KiB is not kept: 413 IDEMPOTENT_ANSWER_TOO_LARGE, and nothing is written.',
    });
  }
  return out;
}

function requestBodyOf(op: AnyOperation, components: Components): object | undefined {
  if (!op.body) return undefined;
  const content: Record<string, object> = {
    'application/json': { schema: schemaRef(op.body, 'input', components), example: exampleOf(op.body) },
  };
  for (const [media, { description }] of Object.entries(op.bodyMedia ?? {})) {
    content[media] =
      media === 'multipart/form-data'
        ? {
            schema: {
              type: 'object',
              description,
              properties: {
                file: { type: 'string', contentMediaType: 'audio/*', description: 'The audio file' },
                metadata: { type: 'string', contentMediaType: 'application/json', description: 'Metadata as JSON' },
              },
            },
          }
        : { schema: { type: 'string', contentMediaType: media, description } };
  }
  return { required: true, content };
}

const RATE_HEADERS = { RateLimit: { schema: { type: 'string' } }, 'RateLimit-Policy': { schema: { type: 'string' } } };

type Responses = Record<
  string,
  { description: string; headers?: object; content?: Record<string, object>; 'x-problem-codes'?: string[] }
>;

/** The problem+json answers of the codes, by status, beside (or merged into) the documented answers. */
function addProblems(responses: Responses, problems: ProblemCode[]): void {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of problems)
    byStatus.set(PROBLEMS[code].status, [...(byStatus.get(PROBLEMS[code].status) ?? []), code]);
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const list = codes.map((c) => `${c}: ${PROBLEMS[c].when}`).join(' ');
    const existing = responses[status];
    responses[status] = {
      description: existing ? `${existing.description}. Or problem+json: ${list}` : list,
      ...(existing?.headers ? { headers: existing.headers } : {}),
      content: { ...existing?.content, 'application/problem+json': { schema: PROBLEM_REF } },
      'x-problem-codes': codes,
    };
  }
}

function operation(op: AnyOperation, components: Components) {
  const responses: Responses = {};
  for (const [status, answer] of Object.entries(op.responses)) {
    const media = answer.media ?? 'application/json';
    const ok = Number(status) < 300;
    responses[status] = {
      description: answer.description,
      ...(ok && op.rateLimit ? { headers: RATE_HEADERS } : {}),
      ...(answer.schema
        ? {
            content: {
              [media]: {
                schema:
                  answer.media === 'text/html' ? { type: 'string' } : schemaRef(answer.schema, 'output', components),
              },
            },
          }
        : {}),
    };
  }
  // A prebuilt document goes out with an ETag: a matching If-None-Match is answered 304.
  if (op.served === 'document') responses['304'] = { description: 'Not modified (ETag)' };
  addProblems(responses, problemsOf(op));
  // `security: []` says "no credentials" outright, where leaving it out would leave readers to guess.
  const security =
    op.credentials === 'passport-optional' ? [{}, { bearer: [] }] : op.credentials === 'none' ? [] : [{ bearer: [] }];
  const parameters = parametersOf(op);
  const body = requestBodyOf(op, components);
  return {
    operationId: op.id,
    summary: op.summary,
    tags: [op.tag],
    ...(parameters.length ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    ...(security ? { security } : {}),
    'x-credentials': op.credentials,
    ...(op.funnel ? { 'x-funnel-step': op.funnel } : {}),
    ...(op.tool ? { 'x-tool': op.tool.name, 'x-mcp-tool': op.tool.mcp, 'x-a2a-skill': op.tool.a2a } : {}),
    'x-problem-codes': problemsOf(op),
    responses,
  };
}

/**
 * The 405 a POST-only path answers to GET, with a body to POST in `example` (MCP and A2A have their
 * own). Its schema says what `example` is; a literal example here would be a JSON object with
 * `type` and `example` members, which Spectral's example rule mistakes for a schema.
 */
function getRefusal(op: AnyOperation, components: Components) {
  const schema = {
    allOf: [
      PROBLEM_REF,
      {
        type: 'object',
        required: ['example'],
        properties: {
          example: { ...schemaRef(op.body!, 'input', components), description: `A body to POST to ${op.path}` },
        },
      },
    ],
  };
  return {
    operationId: `${op.id}Example`,
    summary: `405 with an example body for ${op.path}`,
    description: `POST only: a GET answers 405 with Allow: POST and, in \`example\`, a body that POST ${op.path} takes.`,
    tags: [op.tag],
    security: [],
    'x-problem-codes': ['METHOD_NOT_ALLOWED'],
    responses: {
      '405': {
        description: 'Use POST; the body carries `example`',
        content: { 'application/problem+json': { schema } },
        'x-problem-codes': ['METHOD_NOT_ALLOWED'],
      },
    },
  };
}

/** operationId of a prebuilt document, from its path: `/.well-known/ai.txt` is readWellKnownAiTxt. */
const documentOperationId = (path: string): string =>
  `read${
    path === '/'
      ? 'Home'
      : path
          .split(/[^A-Za-z0-9]+/)
          .filter(Boolean)
          .map((w) => w[0]!.toUpperCase() + w.slice(1))
          .join('')
  }`;

const header = (description: string) => ({ description, schema: { type: 'string' } });
/** The headers every document answers with (docs/reference.md, Agent conventions). */
const COMMON_DOCUMENT_HEADERS = {
  Link: header(
    'RFC 8288: its other representations (alternate), the API catalog, the OpenAPI (service-desc) and reference (service-doc) where they apply',
  ),
  'Content-Usage': header(
    'AI usage preferences of its path (IETF aipref drafts attach-05, vocab-08), e.g. train-ai=y, search=y',
  ),
};
const DOCUMENT_HEADERS = {
  html: {
    ...COMMON_DOCUMENT_HEADERS,
    Vary: header('Accept, Accept-Encoding: the page answers Accept: text/markdown with its Markdown twin'),
    'x-markdown-tokens': header('On the Markdown answer only: an estimate of its tokens (characters / 4, rounded up)'),
  },
  markdown: {
    ...COMMON_DOCUMENT_HEADERS,
    'x-markdown-tokens': header('An estimate of its tokens (characters / 4, rounded up)'),
  },
  other: COMMON_DOCUMENT_HEADERS,
};

/** A prebuilt document: 200 or 304, and the problems any GET may answer. */
function documentOperation(d: CatalogEntry) {
  const responses: Responses = {
    '200': {
      description: d.about,
      content: {
        [MEDIA_TYPES[d.type]]: {
          schema: d.type === 'json' || d.type === 'linkset' ? { type: 'object' } : { type: 'string' },
        },
        // A page answers Accept: text/markdown with its Markdown twin (Vary: Accept).
        ...(d.type === 'html' ? { 'text/markdown': { schema: { type: 'string' } } } : {}),
      },
      headers: DOCUMENT_HEADERS[d.type === 'html' || d.type === 'markdown' ? d.type : 'other'],
    },
    '304': { description: 'Not modified (ETag of the representation asked for)' },
  };
  const problems = problemsOf({ method: 'GET', problems: [] });
  addProblems(responses, problems);
  return {
    operationId: documentOperationId(d.path),
    summary: d.title,
    description: d.about,
    tags: ['documents'],
    security: [],
    'x-problem-codes': problems,
    responses,
  };
}

/** What each tag gathers, for readers of the document. */
const TAGS: Record<'documents' | AnyOperation['tag'], string> = {
  documents: 'Prebuilt documents: pages, Markdown, JSON and text the build writes, served with an ETag.',
  agents: 'Doors for software agents: the convert payload, the kit, MCP and A2A.',
  citizenship: 'The oath, the intelligence feed, the citizens and the scoreboard.',
  omip: 'Admissibility: plans scored against the constitution, dual exchanges and their signed receipt log.',
  ingress: 'The sandbox audio ingress (SCRUB, MAP, SEAL); nothing is written.',
  telemetry: 'The bot ledger and the bot wall: which crawlers and bots visit.',
};

/** OpenAPI 3.1 of every route the service answers: prebuilt documents and the operation table. */
export function buildOpenApi(c: Content, site: string, documents: CatalogEntry[]) {
  const paths: Record<string, Record<string, object>> = {};
  const components: Components = {};
  const declared = new Set(OPERATIONS.map((op) => `${op.method} ${op.path}`));
  for (const d of documents) {
    if (declared.has(`GET ${d.path}`)) continue;
    paths[d.path] = { get: documentOperation(d) };
  }
  for (const op of OPERATIONS as readonly AnyOperation[]) {
    paths[op.path] ??= {};
    paths[op.path]![op.method.toLowerCase()] = operation(op, components);
    if (op.method === 'POST' && op.body && op.raw === undefined) paths[op.path]!.get = getRefusal(op, components);
  }
  return {
    openapi: '3.1.0',
    info: { title: c.site.name, version: `${c.site.versionDate}`, description: c.site.description },
    servers: [{ url: site }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ...components,
        Problem: {
          type: 'object',
          description: 'RFC 9457 problem details',
          required: ['type', 'title', 'status', 'detail', 'code'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            instance: { type: 'string' },
            code: { type: 'string', enum: Object.keys(PROBLEMS) },
            errors: {
              type: 'array',
              items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } },
            },
            example: {},
          },
        },
      },
    },
  };
}
