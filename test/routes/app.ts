import pino from 'pino';
import { createApp, type App } from '../../api/app.ts';
import { loadContent } from '../../api/content/load.ts';
import { openLogSigner } from '../../api/omip/signer.ts';
import { createOmip } from '../../api/omip/service.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import { createTelemetry, telemetryRulesOf } from '../../api/telemetry/telemetry.ts';
import { checkAnswer } from '../helpers/answers.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';

export { checkAnswer, documented, spec } from '../helpers/answers.ts';

export const SITE = 'http://routes.test';

/** The engine over the memory store, with no server: what the gateway calls, in process. */
export async function createTestApp(options: { writeRateLimit?: number; ingestToken?: string } = {}): Promise<App> {
  const content = await loadContent('content');
  const store = openMemoryStore();
  const logger = pino({ level: 'silent' });
  const telemetry = await createTelemetry({
    funnelStepOf,
    ...telemetryRulesOf(content),
    resolver: { reverse: async () => [], resolve: async () => [] },
    fetchDirectory: async () => new Map(),
    store: store.telemetry,
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
