import { looksCloudflare } from './cloudflare.ts';
import { looksCloudFront } from './cloudfront.ts';
import { looksCombined } from './combined.ts';
import { jsonRecord } from './normalise.ts';
import type { LogFormat } from './types.ts';

const JSON_LINE_KEYS = new Set(['method', 'path', 'host', 'userAgent', 'status', 'time', 'clientAddress']);

/** The format of one record, from its content alone; null when nothing says. */
export function formatOf(record: string | Record<string, unknown>): LogFormat | null {
  if (typeof record === 'string') {
    if (looksCloudFront(record)) return 'cloudfront';
    if (looksCombined(record)) return 'combined';
    if (!record.trimStart().startsWith('{')) return null;
  }
  const r = jsonRecord(record);
  if (r === null || r === 'unparseable') return null;
  if (looksCloudflare(r)) return 'cloudflare';
  return Object.keys(r).every((k) => JSON_LINE_KEYS.has(k)) ? 'json' : 'drain';
}

/** The format of a batch: that of its first few records that say one (a file holds one format). */
export function detectFormat(records: readonly (string | Record<string, unknown>)[], sample = 20): LogFormat | null {
  let seen = 0;
  for (const record of records) {
    if (typeof record === 'string' && record.trim() === '') continue;
    const format = formatOf(record);
    if (format) return format;
    if (++seen >= sample) break;
  }
  return null;
}
