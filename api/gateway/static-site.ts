import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { extname, join, posix, relative, sep } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { securityHeaderList, withCharset } from '../http/security-headers.ts';

/** The content-codings a prebuilt file is held in. */
export type Coding = 'identity' | 'gzip' | 'br';

/** A prebuilt file held in memory with its precompressed forms. */
export interface StaticFile {
  body: Buffer;
  gzip?: Buffer;
  br?: Buffer;
  /**
   * A strong ETag per representation: the hash of the identity body, with the coding inside the
   * quotes for the compressed ones (`"…-gzip"`, `"…-br"`). RFC 9110 8.8.3: a strong validator
   * differs for every representation, and a gzip body is not a br body.
   */
  etags: { identity: string; gzip?: string; br?: string };
  type: string;
  cacheControl: string;
  /** The Vary value: `Accept-Encoding`, and `Accept` too where the path also answers Markdown (withDocumentHeaders). */
  vary?: string;
  /** Headers of the document beyond the file's own (Link, Content-Usage, x-markdown-tokens), as a flat list. */
  extra?: string[];
  /** The format the bot ledger counts a read of it as, and a Markdown file's token estimate (api/gateway/documents.ts). */
  format?: 'markdown' | 'html' | 'json';
  tokens?: number;
  /** Response headers per coding, made once at load as flat [name, value, ...] lists; a 304 gets its coding's validators. */
  headers: {
    identity: string[];
    gzip?: string[];
    br?: string[];
    notModified: { identity: string[]; gzip?: string[]; br?: string[] };
  };
}

/** What the build records beside the client files (`dist/static-manifest.json`). */
export interface StaticManifest {
  /** The SITE_URL the documents were built with: their absolute links start with it. */
  siteUrl?: string;
  /** URL path -> response headers of prerendered routes (Content-Type above all). */
  routes: Record<string, Record<string, string>>;
}

/** Reads a parsed static-manifest.json; a build from before the site URL was recorded is a plain route map. */
export function staticManifestOf(json: unknown): StaticManifest {
  const o = (json ?? {}) as Record<string, unknown>;
  if (typeof o.routes === 'object' && o.routes !== null)
    return {
      routes: o.routes as StaticManifest['routes'],
      ...(typeof o.siteUrl === 'string' ? { siteUrl: o.siteUrl } : {}),
    };
  return { routes: o as StaticManifest['routes'] };
}

/**
 * Header names in lower case, as HTTP/2 writes them (HTTP/1.1 names are case-insensitive): node
 * lower-cases every name it sends to look for Connection, Content-Length and the like, a new string
 * per header per answer for a capitalised one (a tenth of a microsecond and more on a static read).
 */
function headerLists(file: Omit<StaticFile, 'headers'>): StaticFile['headers'] {
  const security = securityHeaderList(file.type).map((v, i) => (i % 2 === 0 ? v.toLowerCase() : v));
  const common = (etag: string) => [
    'etag',
    etag,
    'cache-control',
    file.cacheControl,
    'vary',
    file.vary ?? 'Accept-Encoding',
    ...security,
  ];
  const withBody = (body: Buffer, etag: string, coding?: string) => [
    'content-type',
    file.type,
    ...common(etag),
    ...(file.extra ?? []),
    ...(coding ? ['content-encoding', coding] : []),
    'content-length',
    String(body.length),
  ];
  return {
    identity: withBody(file.body, file.etags.identity),
    ...(file.gzip ? { gzip: withBody(file.gzip, file.etags.gzip!, 'gzip') } : {}),
    ...(file.br ? { br: withBody(file.br, file.etags.br!, 'br') } : {}),
    // A 304 has no body and sends no Content-Type (RFC 9110 15.4.5): clients such as Prism's proxy parse a body by it.
    notModified: {
      identity: common(file.etags.identity),
      ...(file.gzip ? { gzip: common(file.etags.gzip!) } : {}),
      ...(file.br ? { br: common(file.etags.br!) } : {}),
    },
  };
}

/** Longest If-None-Match read: some twenty entity tags, where a client sends the one it holds. */
export const IF_NONE_MATCH_MAX_CHARS = 1024;

/**
 * The same file with `extra` headers and a Vary value of its own, its header lists made anew
 * (once, at start: a read still sends one prebuilt list).
 */
export function withDocumentHeaders(file: StaticFile, extra: string[], vary?: string): StaticFile {
  const { headers: _old, ...rest } = file;
  const next: Omit<StaticFile, 'headers'> = { ...rest, extra: [...(file.extra ?? []), ...extra] };
  if (vary !== undefined) next.vary = vary;
  return { ...next, headers: headerLists(next) };
}

/**
 * Whether an If-None-Match value matches `etag` (RFC 9110 13.1.2: weak comparison, so `W/"x"`
 * matches `"x"`; `*` matches any current representation). Tags are read as quoted strings, not
 * split on commas, which an entity-tag may contain.
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  // A longer list than IF_NONE_MATCH_MAX_CHARS is not read (12 KB cost 255 µs): the full answer is sent.
  if (header === undefined || header.length > IF_NONE_MATCH_MAX_CHARS) return false;
  if (header.trim() === '*') return true;
  for (const [, tag] of header.matchAll(/(?:W\/)?("[^"]*")/g)) if (tag === etag) return true;
  return false;
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

/** Pages revalidate every time; Astro's assets (`_astro/`, content-hashed names) never change; documents keep five minutes. */
function cacheControlOf(rel: string, ext: string, type: string): string {
  if (isAsset(rel)) return 'public, max-age=31536000, immutable';
  return ext === '.html' || type.startsWith('text/html')
    ? 'public, max-age=0, must-revalidate'
    : 'public, max-age=300, stale-while-revalidate=3600';
}
const isAsset = (rel: string) => rel.split(sep)[0] === '_astro';

/** Media types whose bodies are text that may carry the site's absolute links. */
const isText = (type: string) =>
  /^(?:text\/|application\/(?:json|xml|javascript|[\w.-]+\+(?:json|xml))\b|image\/svg\+xml\b)/i.test(type);

/**
 * `text` with every occurrence of the origin `from` (SITE_URL, possibly with a path) replaced by
 * `to`, except where `from` is only the start of a longer host or port (`from` followed by a
 * letter, digit, `-`, `.` and a letter, `:` and a digit, or `@`). A sentence's full stop still counts as an end.
 */
export function withOrigin(text: string, from: string, to: string): string {
  const escaped = from.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return text.replace(new RegExp(`${escaped}(?!\\.?[\\w-]|:\\d|@)`, 'g'), () => to);
}

/** The identity ETag's hash of a body; the build names its compressed forms by it. */
const tagOf = (body: Buffer) => createHash('sha256').update(body).digest('base64url').slice(0, 27);

/** The folder beside the client build that holds its compressed forms (`<tag>.gz`, `<tag>.br`). */
export const PRECOMPRESSED_DIR = 'precompressed';

/** gzip and brotli at their best: about a second for the whole site, so the build does it once. */
function compress(body: Buffer): { gzip: Buffer; br: Buffer } {
  return {
    gzip: gzipSync(body, { level: 9 }),
    br: brotliCompressSync(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
    }),
  };
}

/**
 * The compressed forms of `body`: read from the build's folder when it made them for exactly this
 * body (named by its hash), made here otherwise (a body rewritten for another SITE_URL, a build
 * from before the folder existed).
 */
async function compressedForms(
  body: Buffer,
  tag: string,
  dir: string | undefined,
): Promise<{ gzip: Buffer; br: Buffer }> {
  if (dir) {
    const [gzip, br] = await Promise.all(
      ['gz', 'br'].map((ext) => readFile(join(dir, `${tag}.${ext}`)).catch(() => undefined)),
    );
    if (gzip && br) return { gzip, br };
  }
  return compress(body);
}

/** A prebuilt file with its ETags, compressed forms and header lists, all made from `body`. */
async function staticFile(
  body: Buffer,
  type: string,
  cacheControl: string,
  precompressed?: string,
): Promise<StaticFile> {
  const tag = tagOf(body);
  const file: Omit<StaticFile, 'headers'> = { body, etags: { identity: `"${tag}"` }, type, cacheControl };
  if (body.length >= COMPRESS_MIN_BYTES) {
    Object.assign(file, await compressedForms(body, tag, precompressed));
    file.etags.gzip = `"${tag}-gzip"`;
    file.etags.br = `"${tag}-br"`;
  }
  return { ...file, headers: headerLists(file) };
}

/** Writes the compressed forms of every file of a client build into `outDir` (the build's last step). */
export async function precompressSite(clientDir: string, outDir: string): Promise<void> {
  await mkdir(outDir, { recursive: true });
  for await (const full of walk(clientDir)) {
    const body = await readFile(full);
    if (body.length < COMPRESS_MIN_BYTES) continue;
    const { gzip, br } = compress(body);
    const tag = tagOf(body);
    await Promise.all([writeFile(join(outDir, `${tag}.gz`), gzip), writeFile(join(outDir, `${tag}.br`), br)]);
  }
}

/**
 * Loads every file of the client build into memory with its gzip and brotli forms (those the build
 * made in `precompressed`, when given, else made here), with the Content-Type recorded at build
 * time for extensionless documents. When the service runs
 * under another SITE_URL than the one the documents were built with (another PORT, say), every
 * text document's links are made to name `siteUrl` first, so each document tells agents the
 * address it is served from; Content-Length, ETags and the compressed forms follow the new body.
 * Astro's content-hashed assets are left as they are (they carry no link of the site).
 */
export async function loadStaticSite(
  clientDir: string,
  manifest: StaticManifest,
  siteUrl?: string,
  precompressed?: string,
): Promise<Map<string, StaticFile>> {
  const files = new Map<string, StaticFile>();
  const built = manifest.siteUrl;
  const moved = built !== undefined && siteUrl !== undefined && built !== siteUrl;
  for await (const full of walk(clientDir)) {
    const rel = relative(clientDir, full);
    if (rel === '_headers') continue;
    let body = await readFile(full);
    const paths = urlPathsOf(rel);
    const recorded = manifest.routes[paths[0]!]?.['content-type'];
    const ext = extname(full);
    const type = recorded ?? BY_EXTENSION[ext] ?? 'application/octet-stream';
    if (moved && isText(type) && !isAsset(rel)) body = Buffer.from(withOrigin(body.toString('utf8'), built, siteUrl));
    const served = await staticFile(body, withCharset(type), cacheControlOf(rel, ext, type), precompressed);
    for (const p of paths) files.set(p, served);
  }
  return files;
}

/** What a path must be decoded or resolved for. A module constant: a literal is a new RegExp each time it runs. */
const TO_RESOLVE = /[%\\\0]|\.\.|\/\.|\/\//;

/**
 * Turns a raw request path into a lookup key, or null when it cannot name a built file
 * (undecodable, NUL, backslash or a `..` segment: nothing may leave the build folder).
 */
export function normalisePath(rawPath: string): string | null {
  // Most paths have nothing to decode or resolve: they are their own key.
  if (rawPath.startsWith('/') && !TO_RESOLVE.test(rawPath)) return rawPath;
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
