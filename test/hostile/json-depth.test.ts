import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

// A deeply nested document is a 422 on every route, never a 500 and a stack.
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON nesting depth', () => {
  it.each([
    ['/api/omip/fingerprint', (d: string) => `{"document":${d}}`],
    ['/api/omip/score', (d: string) => `{"entity_id":"sovereign-a","plan":${d}}`],
    ['/api/citizenship/oath', (d: string) => `{"name":"deep","x":${d}}`],
    ['/api/ingress/audio', (d: string) => `{"title":${d}}`],
  ])('POST %s with a document 3,000 deep answers 422 JSON_TOO_DEEP', async (path, wrap) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: wrap(nested(3000)),
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const problem = await res.json();
    expect(problem.code).toBe('JSON_TOO_DEEP');
    expect(problem.limit).toBe(64);
  });

  it('takes a document at the documented depth (64), and counts brackets inside strings as text', async () => {
    const deep = await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: `{"document":{"a":${nested(62)}}}`,
    });
    expect(deep.status).toBe(200);
    const deeper = await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: `{"document":{"a":${nested(63)}}}`,
    });
    expect(deeper.status).toBe(422);
    const text = await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ document: { s: '['.repeat(5000) + '\\"{' } }),
    });
    expect(text.status).toBe(200);
    // A string that ends in an escaped backslash is closed by the quote after it: the nesting that follows counts.
    const afterBackslash = await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: `{"document":{"s":"a\\\\","t":${nested(70)}}}`,
    });
    expect(afterBackslash.status).toBe(422);
  });

  it('writes no error-level line for them', async () => {
    const from = server.logs.length;
    for (let i = 0; i < 20; i++)
      await fetch(`${server.url}/api/omip/fingerprint`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: `{"document":${nested(3000)}}`,
      });
    await fetch(`${server.url}/llms.txt`);
    // The log is written in order: once the later request's line is in, the earlier ones are too.
    await server.waitForLog((l) => l.includes('"path":"/llms.txt"'), { from });
    expect(server.logs.slice(from).filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
  });
});
