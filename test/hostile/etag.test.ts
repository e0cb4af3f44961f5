import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noneMatch } from '../../api/gateway/static-site.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// /api/convert once sent one strong ETag for its identity, gzip and br bodies, and a 304
// answered across codings. RFC 9110 8.8.3: a strong validator differs per representation.
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:' });
});
afterAll(async () => {
  await server.stop();
});

const CODINGS = { identity: 'identity', gzip: 'gzip', br: 'br' } as const;
type Coding = keyof typeof CODINGS;

/** A raw request with exactly the headers given (fetch would add its own Accept-Encoding and decode). */
function get(path: string, headers: Record<string, string>, method = 'GET') {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(server.url + path, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    },
  );
}
const as = (coding: Coding, extra: Record<string, string> = {}) => ({ 'Accept-Encoding': CODINGS[coding], ...extra });

/** The ETag of each coding of a document. */
async function etagsOf(path: string): Promise<Record<Coding, string>> {
  const out = {} as Record<Coding, string>;
  for (const coding of Object.keys(CODINGS) as Coding[]) {
    const res = await get(path, as(coding));
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe(coding === 'identity' ? undefined : coding);
    // A page also varies on Accept: it answers text/markdown with its Markdown twin.
    expect(res.headers.vary).toBe(path === '/' ? 'Accept, Accept-Encoding' : 'Accept-Encoding');
    out[coding] = res.headers.etag as string;
  }
  return out;
}

describe('ETag per representation', () => {
  it('identity, gzip and br bodies of one document carry three different strong ETags', async () => {
    for (const path of ['/api/convert', '/agents/kit.json', '/llms.txt', '/']) {
      const tags = await etagsOf(path);
      for (const tag of Object.values(tags)) expect(tag, path).toMatch(/^"[^"]+"$/);
      expect(new Set(Object.values(tags)).size, path).toBe(3);
    }
  });

  it('answers 304 only for the representation whose ETag was sent', async () => {
    const tags = await etagsOf('/api/convert');
    for (const held of Object.keys(CODINGS) as Coding[]) {
      for (const asked of Object.keys(CODINGS) as Coding[]) {
        const res = await get('/api/convert', as(asked, { 'If-None-Match': tags[held] }));
        if (held === asked) {
          expect(res.status, `${held} tag, ${asked} asked`).toBe(304);
          expect(res.body.length).toBe(0);
          // The 304 names the representation it stands for.
          expect(res.headers.etag).toBe(tags[asked]);
          expect(res.headers.vary).toBe('Accept-Encoding');
        } else {
          expect(res.status, `${held} tag, ${asked} asked`).toBe(200);
          expect(res.headers.etag).toBe(tags[asked]);
        }
      }
    }
  });

  it('compares weakly (W/ matches), finds a tag in a list, takes * and HEAD', async () => {
    const tags = await etagsOf('/api/convert');
    expect((await get('/api/convert', as('gzip', { 'If-None-Match': `W/${tags.gzip}` }))).status).toBe(304);
    expect(
      (await get('/api/convert', as('br', { 'If-None-Match': `"other", ${tags.identity}, W/${tags.br}` }))).status,
    ).toBe(304);
    expect((await get('/api/convert', as('br', { 'If-None-Match': `"other", ${tags.identity}` }))).status).toBe(200);
    expect((await get('/api/convert', as('identity', { 'If-None-Match': '*' }))).status).toBe(304);
    expect((await get('/api/convert', as('br', { 'If-None-Match': tags.br }), 'HEAD')).status).toBe(304);
    expect((await get('/api/convert', as('br', { 'If-None-Match': tags.gzip }), 'HEAD')).status).toBe(200);
  });

  it('reads tags as quoted strings (an entity-tag may hold a comma)', () => {
    expect(noneMatch('"a,b"', '"a,b"')).toBe(true);
    expect(noneMatch('"a,b"', '"a"')).toBe(false);
    expect(noneMatch(' W/"x-gzip" ,"y"', '"x-gzip"')).toBe(true);
    expect(noneMatch('x-gzip', '"x-gzip"')).toBe(false);
    expect(noneMatch(undefined, '"x"')).toBe(false);
  });

  it('the _headers file for a CDN sets no validator of its own: the CDN makes one per representation', () => {
    const cdn = readFileSync(join(TEST_DIST, 'client', '_headers'), 'utf8');
    expect(cdn).not.toMatch(/^\s*etag:/im);
    expect(cdn).not.toMatch(/^\s*last-modified:/im);
  });
});
