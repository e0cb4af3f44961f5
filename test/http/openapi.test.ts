import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { OPERATIONS } from '../../api/operations/table.ts';
import { checkAnswer } from '../routes/app.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIST } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let spec: Record<string, any>;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0', INGEST_TOKEN: 'openapi-test-token-0123456789abcdefgh' });
  spec = await (await fetch(`${server.url}/openapi.json`)).json();
});
afterAll(async () => {
  await server.stop();
});

const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));

/** URL paths of the prebuilt files the gateway serves. */
function staticPaths(): string[] {
  return (
    walk(join(TEST_DIST, 'client'))
      .map((f) => `/${relative(join(TEST_DIST, 'client'), f).split(sep).join('/')}`)
      .filter((p) => p !== '/_headers' && p !== '/404.html')
      // The pages' own assets (stylesheet, scripts, icons) are not documents of the API.
      .filter((p) => !p.startsWith('/_astro/') && !/^\/favicon\.(svg|ico)$/.test(p))
      .map((p) => (p === '/index.html' ? '/' : p.replace(/\/index\.html$/, '')))
  );
}

/**
 * URL paths of the on-demand Astro pages (prerender = false), as OpenAPI templates. The engine's
 * routes are dispatched from the table OpenAPI is made from (api/operations/table.ts).
 */
function dynamicPaths(): string[] {
  return walk('src/pages')
    .filter((f) => /prerender = false/.test(readFileSync(f, 'utf8')))
    .map((f) =>
      `/${relative('src/pages', f).split(sep).join('/')}`.replace(/\.(ts|astro)$/, '').replace(/\[(\w+)\]/g, '{$1}'),
    );
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(spec.openapi).toBe('3.1.0');
    const result = await new Validator().validate(spec);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every route the gateway serves, static and dynamic', () => {
    const documented = new Set(Object.keys(spec.paths));
    const served = [...staticPaths(), ...dynamicPaths(), ...OPERATIONS.map((op) => op.path)];
    expect(served.length).toBeGreaterThan(30);
    expect(dynamicPaths()).toContain('/bot-wall');
    expect(served.filter((p) => !documented.has(p))).toEqual([]);
  });

  it('describes bodies, problems, headers and paging from the schemas', () => {
    const oath = spec.paths['/api/citizenship/oath'].post;
    expect(oath.requestBody.content['application/json'].example).toMatchObject({
      name: expect.any(String),
      purpose: expect.any(String),
    });
    expect(oath.responses['201'].headers).toHaveProperty('RateLimit');
    expect(oath.responses['422'].content).toHaveProperty('application/problem+json');
    expect(oath.parameters.map((p: any) => p.name)).toContain('Idempotency-Key');
    expect(spec.paths['/api/citizens'].get.parameters.map((p: any) => p.name)).toEqual(['cursor', 'limit']);
    expect(spec.paths['/api/intelligence/message'].post.security).toEqual([{}, { bearer: [] }]);
    expect(spec.paths['/api/omip/score'].get.responses).toHaveProperty('405');
    expect(JSON.stringify(spec.components.schemas.OathRequest)).toContain('"maxLength":100');
  });

  it('every documented route answers as documented', async () => {
    const receipt = await (
      await fetch(`${server.url}/api/omip/dual-exchange`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(
          spec.paths['/api/omip/dual-exchange'].post.requestBody.content['application/json'].example,
        ),
      })
    ).json();
    for (const [template, methods] of Object.entries(spec.paths) as [string, Record<string, any>][]) {
      const path = template.replace('{id}', encodeURIComponent(receipt.receipt.id));
      for (const [method, op] of Object.entries(methods)) {
        const body = op.requestBody?.content['application/json']?.example;
        const headers: Record<string, string> = { 'Content-Type': 'application/json' };
        if (template === '/api/telemetry/ingest')
          headers.Authorization = 'Bearer openapi-test-token-0123456789abcdefgh';
        if (template === '/mcp' || template === '/a2a')
          Object.assign(headers, { Accept: 'application/json, text/event-stream', 'A2A-Version': '1.0' });
        const res = await fetch(server.url + path, {
          method: method.toUpperCase(),
          headers,
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        const text = await res.text();
        expect(Object.keys(op.responses), `${method.toUpperCase()} ${path} answered ${res.status}`).toContain(
          String(res.status),
        );
        // The answer matches the schema documented for its status and media type.
        const media = res.headers.get('content-type') ?? '';
        if (/json/.test(media) && text !== '')
          checkAnswer(method.toUpperCase(), path, res.status, media, JSON.parse(text));
      }
    }
  });
});
