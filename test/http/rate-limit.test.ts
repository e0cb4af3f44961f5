import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '3' });
});
afterAll(async () => {
  await server.stop();
});

describe('write rate limit', () => {
  it('allows WRITE_RATE_LIMIT writes a minute, then 429 with Retry-After; reads stay open', async () => {
    const post = () =>
      fetch(`${server.url}/api/intelligence/message`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"name":"r","message":"m"}',
      });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await post());
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 429]);
    expect(answers[0]!.headers.get('ratelimit-policy')).toBe('"writes";q=3;w=60');
    expect(answers[0]!.headers.get('ratelimit')).toMatch(/^"writes";r=2;t=\d+$/);
    expect(answers[2]!.headers.get('ratelimit')).toMatch(/^"writes";r=0;t=\d+$/);
    const limited = answers[3]!;
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('content-type')).toBe('application/problem+json');
    expect((await limited.json()).code).toBe('RATE_LIMITED');
    expect((await fetch(`${server.url}/api/citizens`)).status).toBe(200);
  });
});
