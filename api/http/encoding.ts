import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { remember } from '../memo.ts';

/**
 * Choices made, by header value: clients send few distinct Accept-Encoding values, and reading one
 * cost ~370 ns a request. At most ENCODING_CHOICES_KEPT values of at most 256 characters are kept
 * (cleared when full), so a client rotating the header costs only the reading.
 */
const choices = new Map<string, 'br' | 'gzip' | null>();
export const ENCODING_CHOICES_KEPT = 256;
/** How many choices are kept (tests read it). */
export const encodingChoicesKept = () => choices.size;

/**
 * Longest Accept-Encoding read: a browser's is under 100 characters. A longer one (11 KB cost 390 µs
 * to read) is not read: the answer goes uncompressed, as to a client that sent none.
 */
export const ACCEPT_ENCODING_MAX_CHARS = 1024;

/** Picks br, then gzip, from an Accept-Encoding header (q=0 refuses a coding). */
export function chooseEncoding(header: string | undefined): 'br' | 'gzip' | null {
  if (!header || header.length > ACCEPT_ENCODING_MAX_CHARS) return null;
  let choice = choices.get(header);
  if (choice === undefined) {
    choice = readAcceptEncoding(header);
    if (header.length <= 256) remember(choices, ENCODING_CHOICES_KEPT, header, choice);
  }
  return choice;
}

function readAcceptEncoding(header: string): 'br' | 'gzip' | null {
  const accepted = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    accepted.set(name!, q ? Number(q.slice(2)) || 0 : 1);
  }
  const ok = (coding: string) => (accepted.get(coding) ?? accepted.get('*') ?? 0) > 0;
  if (ok('br')) return 'br';
  if (ok('gzip')) return 'gzip';
  return null;
}

// Live JSON is compressed per answer, so brotli runs at a fast quality; prebuilt files get 11 at start.
const brotliFast = promisify(brotliCompress);
const gzipFast = promisify(gzip);
/** Bodies smaller than this go as they are: compression would not pay for itself. */
export const COMPRESS_MIN_BYTES = 1024;

/** A body compressed for the coding the client takes, or null when it should go as it is. */
export async function compressFor(
  acceptEncoding: string | undefined,
  body: string,
): Promise<{ coding: 'br' | 'gzip'; bytes: Buffer } | null> {
  if (body.length < COMPRESS_MIN_BYTES) return null;
  const coding = chooseEncoding(acceptEncoding);
  if (coding === null) return null;
  const bytes =
    coding === 'br'
      ? await brotliFast(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } })
      : await gzipFast(body, { level: 6 });
  return { coding, bytes };
}
