import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, startServerProcess, type TestServer } from '../helpers/server.ts';
import { SHUTDOWN_GRACE_MS } from '../../api/server.ts';
import { bodyOf, rawClient, statusOf } from '../hostile/raw.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ BODY_LIMIT_BYTES: '1024' });
});
afterAll(async () => {
  await server.stop();
});

/** A raw HTTP/1.1 exchange, so paths reach the server exactly as written. */
function raw(text: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(text));
    let out = '';
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

/** node:http request that leaves Content-Encoding alone (fetch would decode it). */
function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  return new Promise<{ status: number; headers: Record<string, any>; body: Buffer }>((resolve, reject) => {
    const req = httpRequest(server.url + path, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('static documents from memory', () => {
  it('answers 304 to a matching If-None-Match', async () => {
    const first = await get('/api/convert');
    expect(first.status).toBe(200);
    expect(first.headers.etag).toMatch(/^".+"$/);
    expect(first.headers['cache-control']).toMatch(/max-age=/);
    const second = await get('/api/convert', { 'If-None-Match': first.headers.etag });
    expect(second.status).toBe(304);
    expect(second.body.length).toBe(0);
    const other = await get('/api/convert', { 'If-None-Match': '"something-else"' });
    expect(other.status).toBe(200);
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const full = await get('/eon/constitution.json');
    const head = await get('/eon/constitution.json', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-length']).toBe(String(full.body.length));
    expect(head.headers['content-type']).toBe(full.headers['content-type']);
  });

  it('chooses brotli or gzip from Accept-Encoding and the bytes decode to the same document', async () => {
    const plain = await get('/api/convert');
    const br = await get('/api/convert', { 'Accept-Encoding': 'gzip, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    const gz = await get('/api/convert', { 'Accept-Encoding': 'gzip, br;q=0' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toMatch(/Accept-Encoding/);
  });

  it('lets caches keep hashed build assets for good, and pages and documents only briefly', async () => {
    const page = await get('/');
    expect(page.headers['cache-control']).toBe('public, max-age=0, must-revalidate');
    const asset = /href="(\/_astro\/[^"]+\.css)"/.exec(page.body.toString('utf8'))?.[1];
    expect(asset, 'the home page links its stylesheet from /_astro/').toBeDefined();
    expect((await get(asset!)).headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await get('/api/convert')).headers['cache-control']).toBe(
      'public, max-age=300, stale-while-revalidate=3600',
    );
  });

  it('answers 405 with Allow to a POST on a document', async () => {
    const res = await fetch(`${server.url}/api/convert`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/GET/);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });
});

describe('path traversal', () => {
  it.each([
    '/../../etc/passwd',
    '/%2e%2e/%2e%2e/etc/passwd',
    '/api/%2E%2E/%2E%2E/package.json',
    '/..%2f..%2fpackage.json',
    '/%2e%2e%5c%2e%2e%5cpackage.json',
    '/%00',
    '/%E0%A4%A',
  ])('never leaves the build folder for %s', async (path) => {
    const answer = await raw(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 (400|404)/);
    expect(answer).not.toMatch(/root:|"name": "agent-node-service"/);
  });
});

describe('bodies and errors', () => {
  it('refuses a declared body over the limit with 413 problem+json', async () => {
    const res = await fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(2000) }),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a chunked body that grows past the limit', async () => {
    const chunk = 'a'.repeat(600);
    const answer = await raw(
      `POST /api/anything HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n258\r\n${chunk}\r\n258\r\n${chunk}\r\n0\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('"code":"PAYLOAD_TOO_LARGE"');
  });

  it('refuses a body of the wrong media type with 415', async () => {
    const res = await fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'name=x',
    });
    expect(res.status).toBe(415);
    expect((await res.json()).code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 404 as problem+json under /api/ and as an HTML page elsewhere', async () => {
    const api = await fetch(`${server.url}/api/no-such-thing`);
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toBe('application/problem+json');
    expect(await api.json()).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      type: expect.any(String),
      title: 'Not found',
      detail: expect.any(String),
    });
    const page = await fetch(`${server.url}/no-such-page`);
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toMatch(/<h1>Not found<\/h1>/);
  });

  it('dispatches engine routes by path: a trailing slash is the same route, an unknown one 404', async () => {
    const slash = await get('/api/citizens/?limit=1');
    expect(slash.status).toBe(200);
    expect(JSON.parse(slash.body.toString())).toHaveProperty('citizens');
    expect((await get('/api/omip/receipts/a/b')).status).toBe(404);
    const unknown = await get(`/api/omip/receipts/sha256:${'0'.repeat(64)}`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toBe('application/problem+json');
    // A parameter that cannot be a receipt id fails its typed pattern.
    expect((await get('/api/omip/receipts/unknown-id')).status).toBe(400);
  });

  it('answers HEAD on a live route with the headers of GET and no body', async () => {
    const full = await get('/api/omip/health');
    const head = await get('/api/omip/health', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-type']).toBe(full.headers['content-type']);
    expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
  });

  it('writes one structured JSON log line per request', async () => {
    const before = server.logs.length;
    await fetch(`${server.url}/llms.txt?secret=should-not-be-logged`);
    // Log lines are written asynchronously, in one ordered buffer: wait for this one, then for a later
    // request's line, by which time a duplicate of the first would have been written too.
    await server.waitForLog((l) => l.includes('"path":"/llms.txt"'), { from: before });
    await fetch(`${server.url}/robots.txt`);
    await server.waitForLog((l) => l.includes('"path":"/robots.txt"'), { from: before });
    // Lines of earlier requests may arrive in the same buffered write: look at this request's lines.
    const lines = server.logs.slice(before).map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === 'request' && l.path === '/llms.txt');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ method: 'GET', path: '/llms.txt', status: 200 });
    expect(server.logs.join('\n')).not.toContain('should-not-be-logged');
  });
});

describe('graceful shutdown', () => {
  it('finishes a request in flight after SIGTERM, then exits 0', async () => {
    // A signal to a process of its own: what a supervisor sends.
    const own = await startServerProcess();
    const body = '{"name":"late"}';
    const client = await rawClient(own);
    // Node answers "100 Continue" as it hands the request to the gateway: from then on it is in flight.
    client.socket.write(
      `POST /api/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 5)}`,
    );
    await client.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    const from = own.logs.length;
    own.child.kill('SIGTERM');
    // "shutting down" is logged as the server stops accepting: the rest of the body comes after that.
    await own.waitForLog((l) => l.includes('"msg":"shutting down"'), { from });
    client.socket.end(body.slice(5));
    const code = await own.stop();
    expect(client.received()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 404/);
    expect(code).toBe(0);
    expect(own.logs.some((l) => l.includes('"msg":"stopped"'))).toBe(true);
  });

  it('ends an upload still arriving at SHUTDOWN_GRACE_MS with a 503 its client reads, not a reset, and exits 0', async () => {
    // The server takes 64 KiB a second: the 6 MiB queued below are far from read when the grace ends.
    const own = await startServerProcess({ DATA_DIR: ':memory:', UPLOAD_BYTES_PER_SECOND: '65536' });
    const client = await rawClient(own);
    try {
      // The upload is under way (its 100 Continue came) before the stop: a connection whose request
      // the server has not read yet is idle, and a stop closes it at once.
      client.socket.write(
        `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\nContent-Length: ${50 * 1024 * 1024}\r\nExpect: 100-continue\r\n\r\n`,
      );
      await client.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
      client.socket.write(Buffer.alloc(6 * 1024 * 1024, 0xff));
      const from = own.logs.length;
      own.child.kill('SIGTERM');
      expect(await own.stop()).toBe(0);
      // Unread bytes at the close would have made the kernel reset the connection, and the client
      // lose the answer: the server reads on and drops them (a lingering close) until it exits.
      expect((await client.closed).error).toBeUndefined();
      const answer = client.received().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      expect(statusOf(answer)).toBe(503);
      expect(bodyOf(answer).code).toBe('SHUTTING_DOWN');
      expect(answer).toMatch(/\r\nConnection: close\r\n/i);
      expect(own.logs.slice(from).join('\n')).toContain('"msg":"stopped"');
    } finally {
      client.socket.destroy();
      await own.stop('SIGKILL');
    }
  }, 60_000);

  it('ends a body trickling in past SHUTDOWN_GRACE_MS with 503, saves and exits 0; a write acknowledged before survives', async () => {
    const own = await startServerProcess();
    const name = `before-stop-${Date.now()}`;
    const client = await rawClient(own);
    // A byte every 200 ms: never silent for BODY_IDLE_TIMEOUT_MS or SEND_TIMEOUT_MS, never done.
    let trickle: NodeJS.Timeout | undefined;
    try {
      const oath = await fetch(`${own.url}/api/citizenship/oath`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name, purpose: 'Be kept.' }),
      });
      expect(oath.status).toBe(201);
      client.socket.write(
        `POST /api/omip/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\nExpect: 100-continue\r\n\r\n`,
      );
      await client.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
      trickle = setInterval(() => client.socket.destroyed || client.socket.write('{'), 200);
      const from = own.logs.length;
      const signalled = performance.now();
      own.child.kill('SIGTERM');
      const bound = SHUTDOWN_GRACE_MS + 5000;
      const code = await Promise.race([
        own.stop(),
        new Promise<string>((resolve) => setTimeout(() => resolve(`still running ${bound} ms after SIGTERM`), bound)),
      ]);
      const took = performance.now() - signalled;
      expect(code).toBe(0);
      // It waited the grace period for the request, and not much longer.
      expect(took).toBeGreaterThan(SHUTDOWN_GRACE_MS - 100);
      await client.closed;
      const answer = client.received().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      expect(statusOf(answer)).toBe(503);
      expect(answer).toMatch(/\r\nRetry-After: 5\r\n/i);
      expect(bodyOf(answer).code).toBe('SHUTTING_DOWN');
      const after = own.logs.slice(from).join('\n');
      expect(after).toContain('"msg":"shutdown grace over: ending requests"');
      expect(after).toContain('"msg":"stopped"');
    } finally {
      clearInterval(trickle);
      client.socket.destroy();
      await own.stop('SIGKILL');
    }
    // The same folder, started again: the acknowledged oath is there.
    const again = await startServerProcess({ DATA_DIR: own.dataDir });
    try {
      const list = await (await fetch(`${again.url}/api/citizens?limit=200`)).json();
      expect(list.citizens.map((c: { name: string }) => c.name)).toContain(name);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  }, 60_000);
});
