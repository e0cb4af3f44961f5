import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { KEEP_ALIVE_MS } from '../../api/server.ts';
import { loadConfig } from '../../api/config.ts';
import { PROBLEMS } from '../../api/problems/table.ts';

/** A POST from one loopback address (so nginx sees distinct clients), with extra headers. */
function post(
  port: number,
  path: string,
  body: unknown,
  { from, headers = {} }: { from: string; headers?: Record<string, string> },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const text = JSON.stringify(body);
  return new Promise((done, fail) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers },
      },
      (res) => {
        let answer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (answer += chunk));
        res.on('end', () => done({ status: res.statusCode!, body: JSON.parse(answer) as Record<string, unknown> }));
      },
    );
    req.on('error', fail);
    req.end(text);
  });
}

const listening = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => done(socket.destroy() !== undefined));
    socket.once('error', () => done(false));
  });

let server: TestServer;
let nginx: ChildProcess;
let port: number;
const oath = (name: string) => ({ name, purpose: 'behind a proxy' });

/** deploy/nginx.conf as the operator includes it, its one upstream line made one line an address (parameters kept). */
async function startNginx(upstreams: string[]): Promise<{ port: number; process: ChildProcess }> {
  const listen = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'nginx-'));
  const site = readFileSync(resolve('deploy/nginx.conf'), 'utf8')
    .replace(/server 127\.0\.0\.1:4321([^;]*);/, (_, parameters: string) =>
      upstreams.map((address) => `server ${address}${parameters};`).join('\n    '),
    )
    .replace(/listen 80;/, `listen 127.0.0.1:${listen};`);
  writeFileSync(join(dir, 'agent-node.conf'), site);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents { worker_connections 256; }\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n  include ${dir}/agent-node.conf;\n}\n`,
  );
  const child = spawn('/usr/sbin/nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await waitFor(() => listening(listen), { intervalMs: 50, what: 'nginx listening' });
  return { port: listen, process: child };
}

beforeAll(async () => {
  server = await startServer({ TRUST_PROXY: '127.0.0.1', WRITE_RATE_LIMIT: '3' });
  // The live process, and one that is gone (nothing listens on its port): nginx must skip it.
  ({ port, process: nginx } = await startNginx([new URL(server.url).host, `127.0.0.1:${await freePort()}`]));
}, 60_000);

afterAll(async () => {
  nginx?.kill('SIGQUIT');
  await server?.stop();
});

describe('behind nginx (deploy/nginx.conf, TRUST_PROXY=127.0.0.1)', () => {
  it('each client behind the proxy has its own write budget, and a client cannot forge its way out of it', async () => {
    for (let i = 0; i < 3; i++)
      expect((await post(port, '/api/citizenship/oath', oath(`proxied-a-${i}`), { from: '127.0.0.2' })).status).toBe(
        201,
      );
    const spent = await post(port, '/api/citizenship/oath', oath('proxied-a-3'), {
      from: '127.0.0.2',
      headers: { 'X-Forwarded-For': '203.0.113.9' },
    });
    expect(spent.status).toBe(429);
    expect(spent.body.code).toBe('RATE_LIMITED');
    // Another client behind the same proxy still writes.
    expect((await post(port, '/api/citizenship/oath', oath('proxied-b-0'), { from: '127.0.0.3' })).status).toBe(201);
  });

  it('a sender that is no trusted proxy is its own client, whatever X-Forwarded-For it sends', async () => {
    const direct = Number(new URL(server.url).port);
    const claims = ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'];
    const answers = [];
    for (const claim of claims)
      answers.push(
        (
          await post(direct, '/api/citizenship/oath', oath(`direct-${claim}`), {
            from: '127.0.0.4',
            headers: { 'X-Forwarded-For': claim },
          })
        ).status,
      );
    expect(answers).toEqual([201, 201, 201, 429]);
  });

  it('skips a process that is gone: GETs and POSTs all reach the live one', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push(
        (await post(port, '/api/citizenship/oath', oath(`skip-${i}`), { from: `127.0.0.${5 + (i % 3)}` })).status,
      );
      statuses.push((await fetch(`http://127.0.0.1:${port}/livez`)).status);
    }
    expect(statuses).toEqual(
      Array(12)
        .fill(0)
        .map((_, i) => (i % 2 ? 200 : 201)),
    );
  });

  it("gives up idle upstream connections before the app does (the keep-alive race's 502)", async () => {
    const conf = readFileSync(resolve('deploy/nginx.conf'), 'utf8');
    const nginxIdle = Number(/^\s*keepalive_timeout (\d+)s;/m.exec(conf)![1]) * 1000;
    const sendTimeout = loadConfig({}).SEND_TIMEOUT_MS;
    expect(nginxIdle).toBeLessThan(KEEP_ALIVE_MS);
    expect(nginxIdle).toBeLessThan(sendTimeout);
  });

  it('closes an idle upstream connection itself before the app would, so the app never closes one under it (the race replayed with the shipped timeouts)', async () => {
    const conf = readFileSync(resolve('deploy/nginx.conf'), 'utf8');
    const nginxIdle = Number(/^\s*keepalive_timeout (\d+)s;/m.exec(conf)![1]) * 1000;
    const app = `:${Number(new URL(server.url).port).toString(16).toUpperCase().padStart(4, '0')}`;
    // Connections to or from the app in a TCP state ('01' established, '06' TIME_WAIT: the side that
    // closed first keeps it), each with its two ends in one order.
    const inState = (state: string) =>
      readFileSync('/proc/net/tcp', 'utf8')
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        .filter((f) => f[3] === state && (f[1]!.endsWith(app) || f[2]!.endsWith(app)));
    const ends = (f: string[]) => [f[1], f[2]].sort().join(' ');
    // A read through nginx leaves an idle upstream connection to the app, kept for reuse: watched by
    // its own ends, so that an earlier test's connection closing late is not taken for it.
    expect((await fetch(`http://127.0.0.1:${port}/api/convert`)).status).toBe(200);
    const upstream = new Set(inState('01').map(ends));
    const ended = await waitFor(
      () =>
        inState('06')
          .filter((f) => upstream.has(ends(f)))
          .map((f) => (f[1]!.endsWith(app) ? 'app' : 'peer')),
      {
        until: (sides) => sides.length > 0,
        timeoutMs: nginxIdle + 10_000,
        intervalMs: 250,
        what: 'nginx giving up its idle upstream connection',
      },
    );
    expect(ended).not.toContain('app');
    // And the next write through the proxy is answered, on a new upstream connection.
    expect(
      (await post(port, '/api/citizenship/oath', oath(`after-idle-${Date.now()}`), { from: '127.0.0.19' })).status,
    ).toBe(201);
  }, 60_000);

  it("takes no process out for the service's 503: after every process answered a GET 503 (a database outage), the next request is served", async () => {
    // Two processes whose reads of the store answer 503 STORE_UNAVAILABLE, as during an outage; their documents answer.
    const processes = await Promise.all(
      [0, 1].map(async () => {
        const p = createServer((req, res) => {
          const down = req.url === '/api/citizens';
          res.writeHead(down ? 503 : 200, { 'Content-Type': 'application/json', 'Retry-After': '1' });
          res.end(down ? '{"code":"STORE_UNAVAILABLE"}' : '{"ok":true}');
        });
        await new Promise<void>((done) => p.listen(0, '127.0.0.1', done));
        return p;
      }),
    );
    const proxy = await startNginx(processes.map((p) => `127.0.0.1:${(p.address() as AddressInfo).port}`));
    const get = (path: string) =>
      new Promise<number>((done, fail) =>
        request({ host: '127.0.0.1', port: proxy.port, path, agent: false }, (res) => {
          res.resume();
          res.on('end', () => done(res.statusCode!));
        })
          .on('error', fail)
          .end(),
      );
    try {
      expect([await get('/api/citizens'), await get('/api/citizens')]).toEqual([503, 503]);
      expect([await get('/livez'), await get('/api/convert')]).toEqual([200, 200]);
    } finally {
      proxy.process.kill('SIGQUIT');
      for (const p of processes) p.close();
    }
  });

  it('answers its own 502 as problem+json with Retry-After when no process answers', async () => {
    await server.stop();
    // node:http, not fetch: the test setup's fetch holds every answer to the service's OpenAPI, and this one is nginx's.
    const r = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((done, fail) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/api/citizenship/oath',
          method: 'POST',
          agent: false,
          headers: { 'Content-Type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => done({ status: res.statusCode!, headers: res.headers, body }));
        },
      );
      req.on('error', fail);
      req.end(JSON.stringify(oath('nobody-home')));
    });
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers['retry-after']).toBe('5');
    expect(JSON.parse(r.body)).toMatchObject({ status: 502, code: 'UPSTREAM_UNAVAILABLE' });
    expect('UPSTREAM_UNAVAILABLE' in PROBLEMS && 'UPSTREAM_TIMEOUT' in PROBLEMS).toBe(true);
  });
});
