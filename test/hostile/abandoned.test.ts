import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { logLine, rawClient, statusOf } from './raw.ts';

// An answer nobody waits for is abandoned, logged 499, and is no error.
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:' });
});
afterAll(async () => {
  await server.stop();
});

describe('GET /mcp opens no endless stream', () => {
  it('answers 405 with Allow: POST at once, as the stateless Streamable HTTP transport may', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      headers: { Accept: 'text/event-stream' },
      signal: AbortSignal.timeout(3000),
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).code).toBe('METHOD_NOT_ALLOWED');
  });

  it('keeps nothing for 200 clients that ask for the stream and leave', async () => {
    for (let i = 0; i < 200; i++) {
      const client = await rawClient(server);
      client.socket.write('GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
      client.socket.destroy();
    }
    // Every one of them finished: the server is idle again and answers at once.
    const res = await fetch(`${server.url}/mcp`, {
      headers: { Accept: 'text/event-stream' },
      signal: AbortSignal.timeout(3000),
    });
    expect(res.status).toBe(405);
  });
});

describe('a client that hangs up mid-request', () => {
  it('is logged with status 499 and writes no error-level line', async () => {
    const from = server.logs.length;
    for (let i = 0; i < 20; i++) {
      const client = await rawClient(server);
      // Half a body, then gone, once the server has the request: Node answers "100 Continue" as it hands the request over.
      client.socket.write(
        'POST /api/citizenship/oath HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400\r\nExpect: 100-continue\r\n\r\n{"name":"half',
      );
      await client.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
      client.socket.destroy();
      await client.closed;
    }
    await logLine(server, from, (l) => l.includes('"path":"/api/citizenship/oath"') && l.includes('"status":499'));
    // The next request's line proves the log was flushed past the 20 abandoned ones.
    await fetch(`${server.url}/llms.txt`);
    await logLine(server, from, (l) => l.includes('"path":"/llms.txt"'));
    const lines = server.logs
      .slice(from)
      .map((l) => JSON.parse(l) as { level: number; status?: number; path?: string });
    const oaths = lines.filter((l) => l.path === '/api/citizenship/oath');
    expect(oaths).toHaveLength(20);
    expect(oaths.every((l) => l.status === 499)).toBe(true);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('still answers a client that stays', async () => {
    const client = await rawClient(server);
    client.socket.write('GET /api/convert HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(statusOf(await client.until(/\r\n\r\n/))).toBe(200);
  });
});
