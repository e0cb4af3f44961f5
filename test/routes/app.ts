import pino from 'pino';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createApp, type App } from '../../api/app.ts';
import { loadContent } from '../../api/content/load.ts';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { openLogSigner } from '../../api/omip/signer.ts';
import { createOmip } from '../../api/omip/service.ts';
import { buildOpenApi } from '../../api/openapi/openapi.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import { createClassifier } from '../../api/telemetry/classify.ts';
import { createTelemetry } from '../../api/telemetry/telemetry.ts';

export const SITE = 'http://routes.test';

/** The engine over the memory store, with no server: what the gateway calls, in process. */
export async function createTestApp(options: { writeRateLimit?: number; ingestToken?: string } = {}): Promise<App> {
  const content = await loadContent('content');
  const store = openMemoryStore();
  const logger = pino({ level: 'silent' });
  const telemetry = await createTelemetry({
    classify: createClassifier(content.botFamilies.families),
    resolver: { reverse: async () => [], resolve: async () => [] },
    families: content.botFamilies.families,
    fetchDirectory: async () => new Map(),
    store: store.telemetry,
    baitPaths: content.crawlPolicy.disallow,
    logger,
  });
  const omip = createOmip({ store, constitution: content.constitution, signer: await openLogSigner(null, undefined) });
  return createApp({ store, telemetry, omip, content, links: { site: SITE, canon: 'https://canon.test' }, logger, writeRateLimit: options.writeRateLimit ?? 0, ingestToken: options.ingestToken });
}

export interface TestAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/**
 * One request through the routes, as hono's `app.request()`: method and path in, the answer out,
 * every answer checked against the schema /openapi.json documents for its operation and status.
 */
export async function request(app: App, method: string, target: string, init: { body?: unknown; raw?: string; headers?: Record<string, string>; client?: string } = {}): Promise<TestAnswer> {
  const path = target.split('?')[0]!;
  const found = app.lookup(method, path);
  if (!found) throw new Error(`no route for ${method} ${path}`);
  const headers = Object.fromEntries(Object.entries({ 'content-type': 'application/json', ...init.headers }).map(([k, v]) => [k.toLowerCase(), v]));
  let answer;
  if ('refuse' in found) answer = found.refuse.toAnswer(path);
  else {
    const text = init.raw ?? (init.body === undefined ? '' : JSON.stringify(init.body));
    answer = await found.handler({ method, target, headers, body: new TextEncoder().encode(text), client: init.client ?? '192.0.2.1', params: found.params });
  }
  const text = typeof answer.body === 'string' ? answer.body : new TextDecoder().decode(answer.body);
  const body = text === '' ? undefined : JSON.parse(text);
  checkAnswer(method, path, answer.status, answer.headers['Content-Type'] ?? answer.headers['content-type'] ?? '', body);
  return { status: answer.status, headers: answer.headers, body };
}

const spec = buildOpenApi(await loadContent('content'), SITE, DOCUMENTS) as any;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: 'openapi', components: spec.components }, 'openapi');
const templates = Object.keys(spec.paths).map((t) => [t, new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`)] as const);
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

/** The operation a method and path fall under in /openapi.json. */
export function documented(method: string, path: string): any {
  const template = templates.find(([, re]) => re.test(path))?.[0];
  return template ? spec.paths[template]?.[method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()] : undefined;
}

/** Fails unless the status is documented for the operation and the body matches its schema for that media type. */
export function checkAnswer(method: string, path: string, status: number, contentType: string, body: unknown): void {
  const op = documented(method, path);
  // A method a path does not take is refused 405 with Allow by the router, whatever the method.
  if (!op && status === 405) return checkSchema(`${method} ${path} 405`, { $ref: '#/components/schemas/Problem' }, body);
  if (!op) throw new Error(`${method} ${path} is not documented`);
  const response = op.responses[String(status)];
  if (!response) throw new Error(`${method} ${path} answered ${status}, which is not documented (${Object.keys(op.responses).join(', ')})`);
  const media = contentType.split(';')[0]!.trim();
  if (body === undefined) return;
  const content = response.content?.[media];
  if (!content?.schema) throw new Error(`${method} ${path} ${status} answered ${media}, which is not documented`);
  checkSchema(`${method} ${path} ${status} ${media}`, content.schema, body);
}

function checkSchema(key: string, documentedSchema: object, body: unknown): void {
  const content = { schema: documentedSchema };
  let validate = validators.get(JSON.stringify(content.schema));
  if (!validate) {
    const schema = JSON.parse(JSON.stringify(content.schema).replaceAll('"#/components/', '"openapi#/components/'));
    validate = ajv.compile(schema);
    validators.set(JSON.stringify(content.schema), validate);
  }
  if (!validate(body)) throw new Error(`${key} does not match its documented schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`);
}

export { spec };
