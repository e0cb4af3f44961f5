import { finish } from './normalise.ts';
import type { LineReader, Parsed } from './types.ts';

/**
 * The columns of Amazon CloudFront's standard (legacy) access logs, in their documented order, for
 * files whose `#Fields:` header was cut off; a `#Fields:` line replaces them.
 */
export const CLOUDFRONT_FIELDS = [
  'date',
  'time',
  'x-edge-location',
  'sc-bytes',
  'c-ip',
  'cs-method',
  'cs(Host)',
  'cs-uri-stem',
  'sc-status',
  'cs(Referer)',
  'cs(User-Agent)',
  'cs-uri-query',
  'cs(Cookie)',
  'x-edge-result-type',
  'x-edge-request-id',
  'x-host-header',
  'cs-protocol',
  'cs-bytes',
  'time-taken',
  'x-forwarded-for',
  'ssl-protocol',
  'ssl-cipher',
  'x-edge-response-result-type',
  'cs-protocol-version',
  'fle-status',
  'fle-encrypted-fields',
  'c-port',
  'time-to-first-byte',
  'x-edge-detailed-result-type',
  'sc-content-type',
  'sc-content-len',
  'sc-range-start',
  'sc-range-end',
];

/** Whether a line belongs to a CloudFront log: a W3C directive or a tab-separated UTC date and time. */
export const looksCloudFront = (text: string): boolean =>
  /^#(Version|Fields):/.test(text) || /^\d{4}-\d{2}-\d{2}\t\d{2}:\d{2}:\d{2}\t/.test(text);

// CloudFront URL-encodes the User-Agent (spaces as %20) and some characters twice.
function decoded(value: string | undefined): string {
  if (value === undefined || value === '-') return '';
  let text = value;
  for (let i = 0; i < 2 && /%[0-9A-Fa-f]{2}/.test(text); i++) {
    try {
      text = decodeURIComponent(text);
    } catch {
      break;
    }
  }
  return text;
}

/**
 * A reader of one CloudFront log (W3C extended format, tab-separated): the latest `#Fields:` header
 * decides the columns. The viewer's Host header (x-host-header) is preferred to the distribution's
 * domain (cs(Host)); date and time are UTC.
 */
export function cloudFrontReader(fields: string[] = CLOUDFRONT_FIELDS): LineReader {
  let columns = new Map(fields.map((f, i) => [f, i]));
  return (record): Parsed | null => {
    if (typeof record !== 'string') return { skip: 'unparseable' };
    if (record.trim() === '') return null;
    if (record.startsWith('#')) {
      const declared = /^#Fields:\s*(.*)$/.exec(record);
      if (declared)
        columns = new Map(
          declared[1]!
            .trim()
            .split(/\s+/)
            .map((f, i) => [f, i]),
        );
      return null;
    }
    const cells = record.replace(/\r$/, '').split('\t');
    const cell = (name: string) => {
      const i = columns.get(name);
      return i === undefined ? undefined : cells[i];
    };
    if (cells.length < 2 || cell('cs-method') === undefined || cell('sc-status') === undefined)
      return { skip: 'unparseable' };
    const date = cell('date');
    const time = cell('time');
    const host = cell('x-host-header');
    return finish({
      method: cell('cs-method'),
      target: cell('cs-uri-stem'),
      host: host && host !== '-' ? host : cell('cs(Host)'),
      userAgent: decoded(cell('cs(User-Agent)')),
      status: cell('sc-status'),
      time: date && time ? `${date}T${time}Z` : undefined,
      clientAddress: cell('c-ip'),
      referer: decoded(cell('cs(Referer)')),
      query: cell('cs-uri-query'),
    });
  };
}
