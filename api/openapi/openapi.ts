import { z } from 'zod';
import type { Content } from '../content/load.ts';
import type { CatalogEntry } from '../documents/catalog.ts';
import { exampleOf } from '../http/route.ts';
import { apiSchemas } from '../schemas/registry.ts';
import { DYNAMIC_ROUTES, type DynamicRoute } from './registry.ts';

const MEDIA: Record<CatalogEntry['type'], string> = {
  html: 'text/html',
  json: 'application/json',
  markdown: 'text/markdown',
  text: 'text/plain',
  xml: 'application/xml',
};

type Components = Record<string, unknown>;

/**
 * JSON Schema of a zod schema for an OpenAPI document: named schemas (meta id) go to
 * components.schemas and are referenced from there.
 */
function schemaRef(schema: z.ZodType, io: 'input' | 'output', components: Components): object {
  const { $schema: _dialect, $defs, ...root } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', metadata: apiSchemas }) as Record<string, unknown> & { $defs?: Components };
  const relink = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/'));
  for (const [name, def] of Object.entries($defs ?? {})) components[name] ??= relink(def);
  return relink(root) as object;
}

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } });

function operation(r: DynamicRoute, components: Components) {
  const params: object[] = [];
  if (r.paged) {
    params.push({ name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } });
    params.push({ name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'nextCursor of the previous page' });
  }
  if (r.path.includes('{id}')) params.push({ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } });
  if (r.path === '/api/omip/log') params.push({ name: 'first', in: 'query', schema: { type: 'integer', minimum: 1 }, description: 'size of an earlier tree for a consistency proof' });
  if (r.write) params.push({ name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 255 }, description: 'Replays the first answer for 24 hours' });
  const ok = r.response ? { content: { 'application/json': { schema: schemaRef(r.response, 'output', components) } } } : { content: { [r.path === '/bot-wall' ? 'text/html' : 'application/json']: {} } };
  const responses: Record<string, object> = {
    [r.status]: {
      description: r.summary,
      ...(r.write ? { headers: { RateLimit: { schema: { type: 'string' } }, 'RateLimit-Policy': { schema: { type: 'string' } } } } : {}),
      ...ok,
    },
    '400': problem('Malformed request'),
    '404': problem('Not found'),
  };
  if (r.method === 'POST') {
    Object.assign(responses, { '413': problem('Body too large'), '415': problem('Wrong media type'), '422': problem('Body fails the schema or a rule') });
    if (r.write) Object.assign(responses, { '409': problem('Idempotency-Key in use'), '429': problem('Rate limited (Retry-After)'), '503': problem('Store cannot write') });
  }
  for (const [status, description] of Object.entries(r.more ?? {})) responses[status] = { description };
  if (r.bearer) responses['401'] = problem(`Missing credential: ${r.bearer}`);
  if (r.bearer?.startsWith('passport')) responses['403'] = problem('Passport does not match the citizen');
  return {
    summary: r.summary,
    tags: [r.tag],
    ...(params.length ? { parameters: params } : {}),
    ...(r.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: schemaRef(r.body, 'input', components), example: exampleOf(r.body) } } } }
      : {}),
    ...(r.bearer ? { security: [{ bearer: [] }] } : {}),
    responses,
  };
}

/** OpenAPI 3.1 of every route the service answers: prebuilt documents and on-demand routes. */
export function buildOpenApi(c: Content, site: string, documents: CatalogEntry[]) {
  const paths: Record<string, Record<string, object>> = {};
  const components: Components = {};
  for (const d of documents) {
    paths[d.path] = { get: { summary: d.title, description: d.about, tags: ['documents'], responses: { '200': { description: d.about, content: { [MEDIA[d.type]]: {} } }, '304': { description: 'Not modified (ETag)' } } } };
  }
  for (const r of DYNAMIC_ROUTES) {
    paths[r.path] ??= {};
    paths[r.path]![r.method.toLowerCase()] = operation(r, components);
    // Our POST-only routes answer GET with 405 and an example; /mcp's GET belongs to the MCP transport.
    if (r.method === 'POST' && r.body) {
      paths[r.path]!.get = { summary: `405 with an example body for ${r.path}`, tags: [r.tag], responses: { '405': problem('Use POST; the body carries `example`') } };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: c.site.name, version: `${c.site.versionDate}`, description: c.site.description },
    servers: [{ url: site }],
    tags: ['documents', 'agents', 'citizenship', 'omip', 'ingress', 'telemetry'].map((name) => ({ name })),
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
            code: { type: 'string' },
            errors: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
            example: {},
          },
        },
      },
    },
  };
}
