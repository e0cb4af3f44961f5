import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../api/engine.ts';
import { createTestApp, request } from './app.ts';

// Moved from the child-process suite: the routes in process, over the memory store, no sleeps.
let app: App;
beforeAll(async () => {
  app = await createTestApp();
});

async function oath(name: string) {
  const answer = await request(app, 'POST', '/api/citizenship/oath', { body: { name, purpose: 'testing the flow' } });
  expect(answer.status).toBe(201);
  return answer.body;
}
const catches = async () => (await request(app, 'GET', '/api/scoreboard')).body.catches.total as number;

describe('passports', () => {
  it('refuses a citizen message without, with a wrong, or with another citizen passport, and does not count it', async () => {
    const o = await oath('guarded');
    const before = await catches();
    const message = { name: 'x', message: 'as someone', citizenId: o.memberId };
    const none = await request(app, 'POST', '/api/intelligence/message', { body: message });
    expect([none.status, none.body.code]).toEqual([401, 'PASSPORT_REQUIRED']);
    expect(none.headers['WWW-Authenticate']).toMatch(/^Bearer/);
    expect(
      (
        await request(app, 'POST', '/api/intelligence/message', {
          body: message,
          headers: { authorization: 'Bearer pp_wrong' },
        })
      ).status,
    ).toBe(403);
    // A passport sent with a space in it is a wrong passport, not a missing one (over MCP and A2A too).
    expect(
      (
        await request(app, 'POST', '/api/intelligence/message', {
          body: message,
          headers: { authorization: `Bearer ${o.passportNumber} x` },
        })
      ).body.code,
    ).toBe('PASSPORT_MISMATCH');
    const other = await oath('other');
    expect(
      (
        await request(app, 'POST', '/api/intelligence/message', {
          body: message,
          headers: { authorization: `Bearer ${other.passportNumber}` },
        })
      ).body.code,
    ).toBe('PASSPORT_MISMATCH');
    // Only the other citizen's oath counted.
    expect(await catches()).toBe(before + 1);
  });

  it('accepts an anonymous message without a passport, unverified', async () => {
    const answer = await request(app, 'POST', '/api/intelligence/message', {
      body: { name: 'passer-by', kind: 'question', message: 'what is track 12?' },
    });
    expect([answer.status, answer.body.message]).toEqual([
      201,
      expect.objectContaining({ verified: false, kind: 'question', wall: false }),
    ]);
  });
});

describe('paging', () => {
  it('pages citizens with cursors and refuses bad paging with a problem', async () => {
    for (const n of ['p1', 'p2', 'p3']) await oath(n);
    const first = await request(app, 'GET', '/api/citizens?limit=2');
    expect(first.body.citizens.map((c: { name: string }) => c.name)).toEqual(['p3', 'p2']);
    const second = await request(app, 'GET', `/api/citizens?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.citizens[0].name).toBe('p1');
    for (const q of ['limit=0', 'limit=201', 'limit=abc', 'cursor=zzz']) {
      const answer = await request(app, 'GET', `/api/citizens?${q}`);
      expect([answer.status, answer.headers['Content-Type']], q).toEqual([400, 'application/problem+json']);
    }
  });
});

describe('bad input on every write route', () => {
  const routes = ['/api/citizenship/oath', '/api/intelligence/message'];
  const cases: [string, string | Uint8Array, number][] = [
    ['malformed JSON', '{"name": ', 400],
    ['empty body', '', 400],
    ['an array', '[1,2]', 422],
    ['a string', '"hello"', 422],
    ['null', 'null', 422],
    ['wrong types', '{"name": 5, "purpose": true, "message": []}', 422],
    [
      'huge strings',
      JSON.stringify({ name: 'x'.repeat(101), purpose: 'y'.repeat(501), message: 'z'.repeat(4001) }),
      422,
    ],
    ['deeply nested JSON', `${'['.repeat(20000)}${']'.repeat(20000)}`, 422],
    ['deeply nested objects', `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`, 422],
    ['control characters', JSON.stringify({ name: 'bad\u0007name', purpose: 'p\u0000', message: 'm\u001b' }), 422],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400],
    ['__proto__ only', '{"__proto__": {"name": "x", "purpose": "y", "message": "z"}}', 422],
    ['an invalid class', '{"name": "x", "purpose": "y", "class": "god", "kind": "shout", "message": "z"}', 422],
    [
      'a javascript: homeUrl',
      '{"name": "x", "purpose": "y", "homeUrl": "javascript:alert(1)", "message": "z", "kind": "poem"}',
      422,
    ],
  ];
  for (const route of routes) {
    it.each(cases)(`${route}: %s is a 4xx problem and stores nothing`, async (_label, body, status) => {
      const before = await catches();
      const raw = typeof body === 'string' ? body : Buffer.from(body).toString('latin1');
      const answer =
        typeof body === 'string' ? await request(app, 'POST', route, { raw }) : await requestBytes(route, body);
      expect(answer.status).toBe(status);
      expect(answer.body).toMatchObject({
        status,
        code: expect.stringMatching(/^[A-Z_]+$/),
        title: expect.any(String),
        detail: expect.any(String),
      });
      expect(await catches()).toBe(before);
    });
  }

  it('answers arbitrary JSON values with a 4xx, never a 5xx (property-based)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), fc.jsonValue(), async (route, value) => {
        const answer = await request(app, 'POST', route, { raw: JSON.stringify(value) });
        if (answer.status === 201)
          expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
        else expect(answer.status >= 400 && answer.status < 500).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

/** A request whose body is raw bytes (invalid UTF-8). */
async function requestBytes(route: string, bytes: Uint8Array) {
  const found = app.lookup('POST', route);
  if (!found || 'refuse' in found) throw new Error('no route');
  const answer = await found.handler({
    method: 'POST',
    target: route,
    headers: { 'content-type': 'application/json' },
    body: bytes,
    client: '192.0.2.9',
    params: found.params,
  });
  return { status: answer.status, body: JSON.parse(String(answer.body)) };
}

describe('GET on POST-only routes', () => {
  it.each(['/api/citizenship/oath', '/api/intelligence/message', '/api/omip/score', '/api/omip/dual-exchange'])(
    '%s answers 405 with Allow: POST and an example body that is accepted',
    async (route) => {
      const refused = await request(app, 'GET', route);
      expect([refused.status, refused.headers.Allow]).toEqual([405, 'POST']);
      const echo = await request(app, 'POST', route, { body: refused.body.example });
      expect(echo.status).toBeLessThan(300);
    },
  );
});

describe('Idempotency-Key, in process', () => {
  it('concurrent requests with one key make one citizen; the others replay or get 409', async () => {
    const headers = { 'idempotency-key': randomUUID() };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        request(app, 'POST', '/api/citizenship/oath', { body: { name: 'idem-race', purpose: 'race' }, headers }),
      ),
    );
    expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true);
    const names = (await request(app, 'GET', '/api/citizens?limit=200')).body.citizens.map(
      (c: { name: string }) => c.name,
    );
    expect(names.filter((n: string) => n === 'idem-race')).toHaveLength(1);
  });
});
