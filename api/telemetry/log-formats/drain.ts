import { finish, jsonRecord } from './normalise.ts';
import type { Parsed } from './types.ts';

// The names log drains give each field. Vercel nests a request under `proxy` (userAgent is a list);
// Netlify's traffic logs use snake_case with `log_type: "traffic"`; Fastly's JSON logging is
// user-defined, and its documented example uses request_method, url, response_status, request_user_agent.
const NAMES = {
  method: ['method', 'request_method', 'http_method', 'httpMethod', 'requestMethod'],
  target: ['path', 'url', 'uri', 'request_uri', 'request_url', 'requestPath', 'request_path'],
  host: ['host', 'hostname', 'request_host', 'domain'],
  userAgent: ['userAgent', 'user_agent', 'request_user_agent', 'http_user_agent', 'ua'],
  status: ['statusCode', 'status_code', 'status', 'response_status', 'responseStatus'],
  time: ['timestamp', 'time', 'start_time', 'date', '@timestamp'],
  referer: ['referer', 'referrer', 'http_referer', 'request_referer'],
  clientAddress: ['clientIp', 'client_ip', 'clientIP', 'ip', 'remote_addr', 'clientAddress', 'c_ip'],
} as const;

function pick(records: Record<string, unknown>[], names: readonly string[]): unknown {
  for (const r of records) {
    for (const name of names) {
      const value = r[name];
      if (value === undefined || value === null || value === '') continue;
      // Vercel sends the User-Agent as a list of the header's values.
      return Array.isArray(value) ? value[0] : value;
    }
  }
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * One record of a JSON log drain (Vercel, Netlify, Fastly): a request's fields under the names above,
 * nested records first (Vercel's `proxy`). Records that are not requests (build output, function
 * logs, deploys) are skipped as such.
 */
export function parseDrain(record: string | Record<string, unknown>): Parsed | null {
  const r = jsonRecord(record);
  if (r === null) return null;
  if (r === 'unparseable') return { skip: r };
  if (typeof r.log_type === 'string' && r.log_type !== 'traffic') return { skip: 'not-a-request' };
  const records = [isObject(r.proxy) ? r.proxy : null, isObject(r.request) ? r.request : null, r].filter(isObject);
  const method = pick(records, NAMES.method);
  if (method === undefined && pick(records, NAMES.target) === undefined) return { skip: 'not-a-request' };
  return finish({
    method,
    target: pick(records, NAMES.target),
    host: pick(records, NAMES.host),
    userAgent: pick(records, NAMES.userAgent),
    status: pick(records, NAMES.status),
    time: pick(records, NAMES.time),
    clientAddress: pick(records, NAMES.clientAddress),
    referer: pick(records, NAMES.referer),
  });
}
