import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  // The test's loopback is the proxy: the forwarded address is the client.
  server = await startServer({ TRUST_PROXY: 'loopback', WRITE_RATE_LIMIT: '2' });
});
afterAll(() => server?.stop());

const oathFrom = (address: string, name: string) =>
  fetch(`${server.url}/api/citizenship/oath`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': address },
    body: JSON.stringify({ name, purpose: 'one budget per /64' }),
  }).then((r) => r.status);

describe('one client key for every per-client limit', () => {
  it('an IPv6 /64 shares one write budget, however many of its 2^64 addresses it writes from', async () => {
    expect(await oathFrom('2001:db8:1:2::a', 'v6-a')).toBe(201);
    expect(await oathFrom('2001:db8:1:2::b', 'v6-b')).toBe(201);
    expect(await oathFrom('2001:db8:1:2:ffff:ffff:ffff:1', 'v6-c')).toBe(429);
    // The next /64 is another client.
    expect(await oathFrom('2001:db8:1:3::1', 'v6-d')).toBe(201);
  });

  it('an IPv4 address is one client, and an IPv4-mapped IPv6 one is the same client', async () => {
    expect(await oathFrom('192.0.2.10', 'v4-a')).toBe(201);
    expect(await oathFrom('::ffff:192.0.2.10', 'v4-b')).toBe(201);
    expect(await oathFrom('192.0.2.10', 'v4-c')).toBe(429);
    expect(await oathFrom('192.0.2.11', 'v4-d')).toBe(201);
  });
});
