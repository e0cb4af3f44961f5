import { OPERATIONS } from '../../api/operations/table.ts';
import { checkAnswer } from './answers.ts';

/**
 * Setup of every test file: each answer a test fetches from a local test server for a path of an
 * operation is checked against the status and schema /openapi.json documents for it, so no test
 * can receive an answer the document does not describe.
 */
const operationPaths = OPERATIONS.map(
  (op) => new RegExp(`^${op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`),
);
// Files may share a worker (vitest's isolate: false): wrap the platform's fetch once, not a wrapper.
const ORIGINAL = Symbol.for('agentnode.test.fetch');
const original: typeof fetch = ((globalThis as any)[ORIGINAL] ??= globalThis.fetch);

globalThis.fetch = async function checkedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await original(input, init);
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  const local = url.hostname === '127.0.0.1' || url.hostname === 'localhost';
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/$/, '') : url.pathname;
  if (!local || !operationPaths.some((re) => re.test(path)) || method === 'HEAD' || response.status === 304)
    return response;
  const type = response.headers.get('content-type') ?? '';
  const text = await response.clone().text();
  checkAnswer(method, path, response.status, type, text === '' || !/json/.test(type) ? undefined : JSON.parse(text));
  return response;
};
