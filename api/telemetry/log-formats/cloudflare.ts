import { finish, jsonRecord } from './normalise.ts';
import type { Parsed } from './types.ts';

/** Fields of Cloudflare Logpush's `http_requests` dataset that tell a request. */
const FIELDS = ['ClientRequestMethod', 'ClientRequestURI', 'EdgeResponseStatus'] as const;

/** Whether a JSON object is a Logpush http_requests record. */
export const looksCloudflare = (record: Record<string, unknown>): boolean =>
  FIELDS.some((f) => f in record) || 'ClientIP' in record;

/**
 * One Logpush `http_requests` record (NDJSON). EdgeStartTimestamp comes in the job's
 * `timestamp_format`: unixnano (the default), unix seconds, or RFC 3339.
 */
export function parseCloudflare(record: string | Record<string, unknown>): Parsed | null {
  const r = jsonRecord(record);
  if (r === null) return null;
  if (r === 'unparseable') return { skip: r };
  if (!looksCloudflare(r)) return { skip: 'not-a-request' };
  return finish({
    method: r.ClientRequestMethod,
    target: r.ClientRequestURI,
    host: r.ClientRequestHost,
    userAgent: r.ClientRequestUserAgent,
    status: r.EdgeResponseStatus,
    time: r.EdgeStartTimestamp ?? r.EdgeEndTimestamp,
    clientAddress: r.ClientIP,
    referer: r.ClientRequestReferer,
  });
}
