import { finish, jsonRecord } from './normalise.ts';
import type { Parsed } from './types.ts';

/** Today's JSON line shape: `{method, path, host, userAgent, status, time, clientAddress, referer}`. */
export function parseJsonLine(record: string | Record<string, unknown>): Parsed | null {
  const r = jsonRecord(record);
  if (r === null) return null;
  if (r === 'unparseable') return { skip: r };
  if (typeof r.path !== 'string' || !r.path.startsWith('/')) return { skip: 'bad-path' };
  if (typeof r.status !== 'number') return { skip: 'bad-status' };
  return finish({
    method: r.method,
    target: r.path,
    host: r.host,
    userAgent: r.userAgent,
    status: r.status,
    time: r.time,
    clientAddress: r.clientAddress,
    referer: r.referer,
  });
}
