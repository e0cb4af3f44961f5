import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../api/engine.ts';
import type { AnyOperation } from '../../api/operations/operation.ts';
import { OPERATIONS } from '../../api/operations/table.ts';
import { PROBLEMS } from '../../api/problems/table.ts';
import { createTestApp, request, spec } from './app.ts';

let app: App;
beforeAll(async () => {
  app = await createTestApp({ ingestToken: 'routes-test-token-0123456789abcdef' });
});

const OATH = { name: 'route-agent', purpose: 'test the routes in process' };

describe('every operation, in process', () => {
  it('answers every documented example with a documented status and a body matching its schema', async () => {
    const dual = await request(app, 'POST', '/api/omip/dual-exchange', {
      body: spec.paths['/api/omip/dual-exchange'].post.requestBody.content['application/json'].example,
    });
    expect(dual.status).toBe(201);
    let sent = 0;
    for (const op of OPERATIONS as readonly AnyOperation[]) {
      if (op.served !== 'engine' || op.raw) continue;
      const documentedOp = spec.paths[op.path][op.method.toLowerCase()];
      const body = documentedOp.requestBody?.content['application/json']?.example;
      const path = op.path.replace('{id}', encodeURIComponent(dual.body.receipt.id));
      const headers: Record<string, string> =
        op.credentials === 'ingest-token' ? { authorization: 'Bearer routes-test-token-0123456789abcdef' } : {};
      const answer = await request(app, op.method, path, { body, headers });
      expect(answer.status, `${op.method} ${path}`).toBe(Number(Object.keys(op.responses)[0]));
      sent++;
    }
    expect(sent).toBeGreaterThan(15);
  });

  it('documents a JSON Schema for every 2xx and 4xx answer of every operation, and the problem codes it may send', () => {
    for (const [path, methods] of Object.entries(spec.paths) as [string, Record<string, any>][]) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(op.responses) as [string, any][]) {
          if (!/^[24]/.test(status) || (status === '202' && path === '/mcp')) continue;
          const schemas = Object.values(response.content ?? {}).map((c: any) => c.schema);
          expect(schemas.length, `${method} ${path} ${status}`).toBeGreaterThan(0);
          expect(schemas.every(Boolean), `${method} ${path} ${status}`).toBe(true);
        }
        if (op.operationId) expect(op['x-problem-codes'].every((c: string) => c in PROBLEMS)).toBe(true);
      }
    }
    expect(JSON.stringify(spec.components.schemas)).not.toContain('__schema');
    expect(spec.paths['/api/intelligence/message'].post.security).toEqual([{}, { bearer: [] }]);
    expect(Object.keys(spec.paths['/api/ingress/audio'].post.requestBody.content)).toEqual([
      'application/json',
      'audio/*',
      'multipart/form-data',
    ]);
    expect(spec.paths['/mcp'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/JsonRpcRequest',
    });
    expect(spec.paths['/mcp'].post.responses['400'].content).toHaveProperty('application/json');
  });
});

describe('validation and problems', () => {
  it('answers malformed JSON 400 and a body that fails the schema 422, with every issue', async () => {
    expect((await request(app, 'POST', '/api/citizenship/oath', { raw: '{"name":' })).body.code).toBe('MALFORMED_JSON');
    const invalid = await request(app, 'POST', '/api/citizenship/oath', { body: { name: '', class: 'alien' } });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['/class', '/name', '/purpose']);
  });

  it('refuses a bad path parameter 400 and an unknown receipt 404', async () => {
    expect((await request(app, 'GET', '/api/omip/receipts/nope')).body.code).toBe('BAD_PATH');
    expect((await request(app, 'GET', `/api/omip/receipts/sha256:${'0'.repeat(64)}`)).status).toBe(404);
    expect((await request(app, 'GET', '/api/omip/log?first=x')).body.code).toBe('INVALID_QUERY');
    expect((await request(app, 'GET', '/api/omip/log?first=99')).body.code).toBe('INVALID_QUERY');
  });

  it('answers 405 with Allow before a body is read, and an example body for a POST route', async () => {
    const get = await request(app, 'GET', '/api/omip/score');
    expect(get.status).toBe(405);
    expect(get.headers.Allow).toBe('POST');
    expect(get.body.example).toMatchObject({ entity_id: 'sovereign-a' });
    const put = await request(app, 'PUT', '/api/citizens', { body: { huge: true } });
    expect([put.status, put.headers.Allow]).toEqual([405, 'GET, HEAD']);
  });
});

describe('passports', () => {
  it('posts anonymously, refuses a citizenId without a passport 401 and with a wrong one 403, and verifies the right one', async () => {
    const oath = await request(app, 'POST', '/api/citizenship/oath', { body: OATH });
    expect(oath.status).toBe(201);
    const message = { name: 'route-agent', message: 'hello', citizenId: oath.body.memberId };
    expect(
      (await request(app, 'POST', '/api/intelligence/message', { body: { name: 'anon', message: 'hi' } })).body.message
        .verified,
    ).toBe(false);
    const missing = await request(app, 'POST', '/api/intelligence/message', { body: message });
    expect([missing.status, missing.body.code, missing.headers['WWW-Authenticate']]).toEqual([
      401,
      'PASSPORT_REQUIRED',
      'Bearer realm="citizens"',
    ]);
    const wrong = await request(app, 'POST', '/api/intelligence/message', {
      body: message,
      headers: { authorization: 'Bearer pp_wrong' },
    });
    expect([wrong.status, wrong.body.code]).toEqual([403, 'PASSPORT_MISMATCH']);
    const right = await request(app, 'POST', '/api/intelligence/message', {
      body: message,
      headers: { authorization: `Bearer ${oath.body.passportNumber}` },
    });
    expect([right.status, right.body.message.verified]).toEqual([201, true]);
  });

  it('guards the CDN ingest with its token', async () => {
    const batch = { lines: [{ method: 'GET', path: '/', status: 200 }] };
    expect((await request(app, 'POST', '/api/telemetry/ingest', { body: batch })).body.code).toBe(
      'INGEST_TOKEN_REQUIRED',
    );
    const unconfigured = await createTestApp();
    expect((await request(unconfigured, 'POST', '/api/telemetry/ingest', { body: batch })).status).toBe(404);
  });
});

describe('idempotency, rate limits and paging', () => {
  it('replays a repeated Idempotency-Key and refuses it with another body', async () => {
    const headers = { 'idempotency-key': randomUUID() };
    const first = await request(app, 'POST', '/api/citizenship/oath', { body: { ...OATH, name: 'idem' }, headers });
    const again = await request(app, 'POST', '/api/citizenship/oath', { body: { ...OATH, name: 'idem' }, headers });
    expect(again.body).toEqual(first.body);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
    expect(
      (await request(app, 'POST', '/api/citizenship/oath', { body: { ...OATH, name: 'other' }, headers })).body.code,
    ).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('limits writes per client with RateLimit headers', async () => {
    const limited = await createTestApp({ writeRateLimit: 1 });
    expect(
      (await request(limited, 'POST', '/api/omip/fingerprint', { body: { document: 1 } })).headers.RateLimit,
    ).toMatch(/r=0/);
    const refused = await request(limited, 'POST', '/api/omip/fingerprint', { body: { document: 1 } });
    expect([refused.status, refused.body.code]).toEqual([429, 'RATE_LIMITED']);
    expect(
      (await request(limited, 'POST', '/api/omip/fingerprint', { body: { document: 1 }, client: '192.0.2.2' })).status,
    ).toBe(200);
  });

  it('pages citizens with cursors and refuses a bad limit or cursor', async () => {
    const paged = await createTestApp();
    for (const name of ['a', 'b', 'c'])
      await request(paged, 'POST', '/api/citizenship/oath', { body: { ...OATH, name } });
    const first = await request(paged, 'GET', '/api/citizens?limit=2');
    expect(first.body.citizens.map((c: { name: string }) => c.name)).toEqual(['c', 'b']);
    const second = await request(
      paged,
      'GET',
      `/api/citizens?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    expect([second.body.citizens.map((c: { name: string }) => c.name), second.body.nextCursor]).toEqual([['a'], null]);
    expect((await request(paged, 'GET', '/api/citizens?limit=0')).body.code).toBe('INVALID_QUERY');
    expect((await request(paged, 'GET', '/api/citizens?cursor=bogus')).body.code).toBe('INVALID_CURSOR');
  });
});

const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));

describe('one declaration, one table', () => {
  it('writes no path of an engine operation or page as a literal outside the operation table', () => {
    const paths = (OPERATIONS as readonly AnyOperation[]).filter((op) => op.served !== 'document').map((op) => op.path);
    const files = [...walk('api'), ...walk('src')].filter(
      (f) => /\.(ts|astro)$/.test(f) && !f.endsWith(join('operations', 'table.ts')),
    );
    const found: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const path of paths) {
        for (const quote of ["'", '"', '`'])
          if (text.includes(`${quote}${path}${quote}`)) found.push(`${file}: ${path}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('makes every HTTP problem from a code of the table, never from a status of its own', () => {
    const literal: string[] = [];
    for (const file of [...walk('api'), ...walk('src')].filter((f) => /\.(ts|astro)$/.test(f))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/new HttpProblem\(\s*(\d{3}|'[^']*')/g)) {
        if (/^\d/.test(m[1]!) || !(m[1]!.slice(1, -1) in PROBLEMS)) literal.push(`${file}: ${m[1]}`);
      }
    }
    expect(literal).toEqual([]);
  });
});
