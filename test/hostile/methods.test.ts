import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { bodyOf, rawClient, statusOf } from './raw.ts';

// Methods a path does not take are 405 with Allow; unknown ones 501; never a 500.
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:' });
});
afterAll(async () => {
  await server.stop();
});

async function exchange(method: string, path: string): Promise<string> {
  const client = await rawClient(server);
  client.socket.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  await client.closed;
  return client.received();
}

describe('methods', () => {
  it.each([
    ['TRACE', '/nope', 'GET, HEAD, OPTIONS'],
    ['TRACE', '/bot-wall', 'GET, HEAD, OPTIONS'],
    ['TRACE', '/mcp', 'POST'],
    ['TRACE', '/api/citizens', 'GET, HEAD'],
    ['TRACE', '/llms.txt', 'GET, HEAD, OPTIONS'],
    ['DELETE', '/bot-wall', 'GET, HEAD, OPTIONS'],
    ['PUT', '/mcp', 'POST'],
  ])('%s %s answers 405 problem+json with Allow: %s', async (method, path, allow) => {
    const answer = await exchange(method, path);
    expect(statusOf(answer)).toBe(405);
    expect(answer).toMatch(new RegExp(`\\r\\nAllow: ${allow}\\r\\n`, 'i'));
    expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
    expect(bodyOf(answer).code).toBe('METHOD_NOT_ALLOWED');
  });

  it('CONNECT (node keeps it from the request handler) answers 405 and closes, instead of holding the socket', async () => {
    const client = await rawClient(server);
    client.socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    await client.closed;
    expect(statusOf(client.received())).toBe(405);
    expect(bodyOf(client.received()).code).toBe('METHOD_NOT_ALLOWED');
  });

  it.each([
    ['PROPFIND', '/'],
    ['MKCOL', '/bot-wall'],
    ['PURGE', '/mcp'],
    ['SEARCH', '/api/citizens'],
  ])('%s %s (outside the methods this server knows) answers 501 problem+json', async (method, path) => {
    const answer = await exchange(method, path);
    expect(statusOf(answer)).toBe(501);
    expect(bodyOf(answer).code).toBe('NOT_IMPLEMENTED');
  });

  it('keeps the connection open after refusing a method, for the next request', async () => {
    const client = await rawClient(server);
    client.socket.write('TRACE /nope HTTP/1.1\r\nHost: x\r\n\r\n');
    const first = await client.until(/"code":"METHOD_NOT_ALLOWED"/);
    expect(first).not.toMatch(/\r\nConnection: close\r\n/i);
    client.socket.write('GET /llms.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await client.closed;
    expect(client.received().slice(first.length)).toMatch(/^HTTP\/1\.1 200/);
  });

  it('never answers 500 to any method on any kind of path', async () => {
    const methods = [
      'GET',
      'HEAD',
      'POST',
      'PUT',
      'PATCH',
      'DELETE',
      'OPTIONS',
      'TRACE',
      'PROPFIND',
      'LOCK',
      'REPORT',
      'LINK',
      'QUERY',
    ];
    const paths = ['/', '/nope', '/bot-wall', '/mcp', '/api/citizens', '/api/omip/score', '/api/nope', '/llms.txt'];
    const statuses = new Set<number>();
    for (const method of methods) for (const path of paths) statuses.add(statusOf(await exchange(method, path)));
    expect([...statuses].filter((s) => !(s >= 200 && s < 500) && s !== 501)).toEqual([]);
  });
});
