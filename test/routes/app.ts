import pino from 'pino';
import type { App } from '../../api/engine.ts';
import { loadConfig } from '../../api/config.ts';
import { createEngine } from '../../api/engine.ts';
import { checkAnswer } from '../helpers/answers.ts';

export { checkAnswer, documented, spec } from '../helpers/answers.ts';

export const SITE = 'http://routes.test';

/** The engine over the memory store, with no server: what the gateway calls, in process (the same composition root as the server). */
export async function createTestApp(options: { writeRateLimit?: number; ingestToken?: string } = {}): Promise<App> {
  const config = loadConfig({
    DATA_DIR: ':memory:',
    SITE_URL: SITE,
    CANON_URL: 'https://canon.test',
    WRITE_RATE_LIMIT: String(options.writeRateLimit ?? 0),
    ...(options.ingestToken ? { INGEST_TOKEN: options.ingestToken } : {}),
  });
  const engine = await createEngine(config, {
    logger: pino({ level: 'silent' }),
    // No lookup leaves the process: no reverse DNS, no key directory.
    resolver: { reverse: async () => [], resolve: async () => [] },
    fetchDirectory: async () => Promise.reject(new Error('no key directories here')),
  });
  return engine.app;
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
export async function request(
  app: App,
  method: string,
  target: string,
  init: { body?: unknown; raw?: string; headers?: Record<string, string>; client?: string } = {},
): Promise<TestAnswer> {
  const path = target.split('?')[0]!;
  const found = app.lookup(method, path);
  if (!found) throw new Error(`no route for ${method} ${path}`);
  const headers = Object.fromEntries(
    Object.entries({ 'content-type': 'application/json', ...init.headers }).map(([k, v]) => [k.toLowerCase(), v]),
  );
  let answer;
  if ('refuse' in found) answer = found.refuse.toAnswer(path);
  else {
    const text = init.raw ?? (init.body === undefined ? '' : JSON.stringify(init.body));
    answer = await found.handler({
      method,
      target,
      headers,
      body: new TextEncoder().encode(text),
      client: init.client ?? '192.0.2.1',
      params: found.params,
    });
  }
  const text = typeof answer.body === 'string' ? answer.body : new TextDecoder().decode(answer.body);
  const body = text === '' ? undefined : JSON.parse(text);
  checkAnswer(
    method,
    path,
    answer.status,
    answer.headers['Content-Type'] ?? answer.headers['content-type'] ?? '',
    body,
  );
  return { status: answer.status, headers: answer.headers, body };
}
