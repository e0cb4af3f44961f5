import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

/** Picks br, then gzip, from an Accept-Encoding header (q=0 refuses a coding). */
export function chooseEncoding(header: string | undefined): 'br' | 'gzip' | null {
  if (!header) return null;
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
