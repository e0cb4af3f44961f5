import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRouter } from '../../api/http/router.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const router = createRouter([
  { method: 'GET', path: '/api/things', handler: 'list' },
  { method: 'POST', path: '/api/things', handler: 'add' },
  { method: 'GET', path: '/api/things/{id}', handler: 'one' },
  { method: 'POST', path: '/api/write', handler: 'write' },
  { method: 'GET', path: '/things.json', handler: 'dotted' },
]);

describe('createRouter', () => {
  it('finds a method and path, ignores a trailing slash, and lets HEAD find GET', () => {
    expect(router.match('GET', '/api/things')).toEqual({ handler: 'list', params: {} });
    expect(router.match('POST', '/api/things/')).toEqual({ handler: 'add', params: {} });
    expect(router.match('HEAD', '/things.json')).toEqual({ handler: 'dotted', params: {} });
  });

  it('returns the parameters of a template, one segment only', () => {
    expect(router.match('GET', '/api/things/a%2Fb')).toEqual({ handler: 'one', params: { id: 'a%2Fb' } });
    expect(router.match('GET', '/api/things/abc/def')).toBeUndefined();
    expect(router.match('GET', '/things_json')).toBeUndefined();
  });

  it('answers the methods a path takes, and their handlers, when the method is not one of them, before any body is read', () => {
    expect(router.match('PUT', '/api/write')).toEqual({ allow: ['POST'], others: ['write'] });
    expect(router.match('DELETE', '/api/things')).toEqual({ allow: ['GET', 'POST', 'HEAD'], others: ['list', 'add'] });
  });

  it('answers an exact path from answers made once (no object a lookup), with parameters no caller can change', () => {
    const list = router.match('GET', '/api/things');
    expect(router.match('GET', '/api/things/')).toBe(list);
    expect(router.match('HEAD', '/things.json')).toBe(router.match('GET', '/things.json'));
    expect(router.match('PUT', '/api/write')).toBe(router.match('PATCH', '/api/write'));
    expect(Object.isFrozen((list as { params: object }).params)).toBe(true);
    // A template's parameters are the request's own.
    expect(router.match('GET', '/api/things/a')).not.toBe(router.match('GET', '/api/things/a'));
  });

  it('leaves unknown paths to the caller and refuses two handlers for one method and path', () => {
    expect(router.match('GET', '/api/nothing')).toBeUndefined();
    expect(() =>
      createRouter([
        { method: 'GET', path: '/a', handler: 1 },
        { method: 'GET', path: '/a', handler: 2 },
      ]),
    ).toThrow(/two handlers/);
  });
});

describe('the gateway asks the router before it reads a body', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ WRITE_RATE_LIMIT: '0' });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('answers a PUT with a body it would refuse (wrong media type) 405 with Allow, not 415', async () => {
    const res = await fetch(`${server.url}/api/citizens`, {
      method: 'PUT',
      headers: { 'Content-Type': 'text/plain' },
      body: 'not json at all',
    });
    expect([res.status, res.headers.get('allow'), (await res.json()).code]).toEqual([
      405,
      'GET, HEAD',
      'METHOD_NOT_ALLOWED',
    ]);
    const post = await fetch(`${server.url}/api/omip/receipts/sha256:${'0'.repeat(64)}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
  });
});
