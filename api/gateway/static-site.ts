import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, posix, relative, sep } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { securityHeaderList, withCharset } from '../http/security-headers.ts';

/** A prebuilt file held in memory with its precompressed forms. */
export interface StaticFile {
  body: Buffer;
  gzip?: Buffer;
  br?: Buffer;
  etag: string;
  type: string;
  cacheControl: string;
  /** Response headers per coding, made once at load as flat [name, value, ...] lists. */
  headers: { identity: string[]; gzip?: string[]; br?: string[]; notModified: string[] };
}

function headerLists(file: Omit<StaticFile, 'headers'>): StaticFile['headers'] {
  const validators = ['ETag', file.etag, 'Cache-Control', file.cacheControl, 'Vary', 'Accept-Encoding', ...securityHeaderList(file.type)];
  const withBody = (body: Buffer, coding?: string) => ['Content-Type', file.type, ...validators, ...(coding ? ['Content-Encoding', coding] : []), 'Content-Length', String(body.length)];
  return {
    identity: withBody(file.body),
    ...(file.gzip ? { gzip: withBody(file.gzip, 'gzip') } : {}),
    ...(file.br ? { br: withBody(file.br, 'br') } : {}),
    // A 304 has no body and sends no Content-Type (RFC 9110 15.4.5): clients such as Prism's proxy parse a body by it.
    notModified: validators,
  };
}

const BY_EXTENSION: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.png': 'image/png',
  '.webp': 'image/webp',
};

// Below this size compression costs more than it saves.
const COMPRESS_MIN_BYTES = 256;

async function* walk(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else if (entry.isFile()) yield full;
  }
}

/** The URL paths a built file answers: `/a/index.html` answers `/a` and `/a/`. */
function urlPathsOf(file: string): string[] {
  const path = `/${file.split(sep).join('/')}`;
  if (path === '/index.html') return ['/', '/index.html'];
  if (path.endsWith('/index.html')) {
    const dir = path.slice(0, -'/index.html'.length);
    return [dir, `${dir}/`, path];
  }
  return [path];
}

/**
 * Loads every file of the client build into memory, compressed once with gzip and brotli, with
 * the Content-Type recorded at build time for extensionless documents.
 */
/** Pages revalidate every time; Astro's assets (`_astro/`, content-hashed names) never change; documents keep five minutes. */
function cacheControlOf(rel: string, ext: string, type: string): string {
  if (rel.split(sep)[0] === '_astro') return 'public, max-age=31536000, immutable';
  return ext === '.html' || type.startsWith('text/html') ? 'public, max-age=0, must-revalidate' : 'public, max-age=300, stale-while-revalidate=3600';
}

export async function loadStaticSite(clientDir: string, manifest: Record<string, Record<string, string>>): Promise<Map<string, StaticFile>> {
  const files = new Map<string, StaticFile>();
  for await (const full of walk(clientDir)) {
    const rel = relative(clientDir, full);
    if (rel === '_headers') continue;
    const body = await readFile(full);
    const paths = urlPathsOf(rel);
    const recorded = manifest[paths[0]!]?.['content-type'];
    const ext = extname(full);
    const type = recorded ?? BY_EXTENSION[ext] ?? 'application/octet-stream';
    const file: Omit<StaticFile, 'headers'> = {
      body,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      type: withCharset(type),
      cacheControl: cacheControlOf(rel, ext, type),
    };
    if (body.length >= COMPRESS_MIN_BYTES) {
      file.gzip = gzipSync(body, { level: 9 });
      file.br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
    }
    const served = { ...file, headers: headerLists(file) };
    for (const p of paths) files.set(p, served);
  }
  return files;
}

/**
 * Turns a raw request path into a lookup key, or null when it cannot name a built file
 * (undecodable, NUL, backslash or a `..` segment: nothing may leave the build folder).
 */
export function normalisePath(rawPath: string): string | null {
  // Most paths have nothing to decode or resolve: they are their own key.
  if (rawPath.startsWith('/') && !/[%\\\0]|\.\.|\/\.|\/\//.test(rawPath)) return rawPath;
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  if (decoded.split('/').includes('..')) return null;
  return posix.normalize(decoded);
}

