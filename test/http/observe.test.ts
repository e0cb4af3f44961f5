import { EventEmitter } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../api/config.ts';
import type { ObservedRequest } from '../../api/gateway/index.ts';
import { startServer, type RunningServer } from '../../api/server.ts';
import { sharedDnsResponder } from '../helpers/dns-responder.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { nextEvent } from '../helpers/wait.ts';

// In-process, so the observer can be a plain array: the gateway must call it once per request.
const seen: ObservedRequest[] = [];
// Each observation is also emitted, so a test can await it.
const observations = new EventEmitter();
let running: RunningServer;
beforeAll(async () => {
  // Reverse-DNS lookups, if any request started one, go to the loopback responder.
  const DNS_SERVERS = (await sharedDnsResponder()).address;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DIST_DIR: TEST_DIST,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'observe-')),
    BODY_LIMIT_BYTES: '64',
    LOG_LEVEL: 'silent',
    DNS_SERVERS,
  });
  const observe = (r: ObservedRequest) => {
    seen.push(r);
    observations.emit('observed', r);
  };
  running = await startServer(config, { observe, logDestination: new Writable({ write: (_c, _e, cb) => cb() }) });
});

const MARKER = '/llms.txt';
/**
 * Sends a later request and waits until it is observed: a request is observed when its response
 * closes, so by then any (duplicate) observation of an earlier request has happened too.
 */
async function afterALaterRequest(): Promise<void> {
  const observed = nextEvent<[ObservedRequest]>(observations, 'observed', { match: (r) => r.path === MARKER });
  await (await fetch(running.url + MARKER)).arrayBuffer();
  await observed;
}
/** The observations other than the marker's. */
const observedBesidesMarker = () => seen.filter((r) => r.path !== MARKER);
afterAll(async () => {
  await running.close();
});

describe('one telemetry call per request', () => {
  const cases: [string, RequestInit, number][] = [
    ['/api/convert', {}, 200],
    ['/whats-next', {}, 200],
    ['/api/no-such-route', {}, 404],
    ['/no-such-page', {}, 404],
    ['/api/convert', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }, 405],
    ['/api/citizenship/oath', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' }, 415],
    [
      '/api/citizenship/oath',
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: 'x'.repeat(100) },
      413,
    ],
  ];
  it.each(cases)('%s %o is observed once with status %i', async (path, init, status) => {
    seen.length = 0;
    const res = await fetch(running.url + path, {
      ...init,
      headers: { ...(init.headers as object), 'User-Agent': 'GPTBot/1.2' },
    });
    await res.arrayBuffer();
    await afterALaterRequest();
    expect(res.status).toBe(status);
    expect(seen).toHaveLength(2);
    expect(observedBesidesMarker()).toHaveLength(1);
    expect(observedBesidesMarker()[0]).toMatchObject({
      method: init.method ?? 'GET',
      path,
      status,
      userAgent: 'GPTBot/1.2',
      host: new URL(running.url).host,
    });
  });

  it('observes a request whose client goes away, once', async () => {
    seen.length = 0;
    const controller = new AbortController();
    const received = nextEvent<[IncomingMessage]>(running.server, 'request', {
      match: (req) => req.url === '/api/slow',
    });
    const pending = fetch(`${running.url}/api/slow`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{')) }),
      signal: controller.signal,
      duplex: 'half',
    } as RequestInit).catch(() => null);
    // Abort once the server has the request, so that it sees the client go away mid-request.
    await received;
    const gone = nextEvent<[ObservedRequest]>(observations, 'observed', { match: (r) => r.path === '/api/slow' });
    controller.abort();
    await pending;
    await gone;
    await afterALaterRequest();
    expect(observedBesidesMarker()).toHaveLength(1);
    expect(observedBesidesMarker()[0]).toMatchObject({ method: 'POST', path: '/api/slow', status: 499 });
  });

  it('observes a User-Agent sent as UTF-8 as its text, and a byte that is no UTF-8 as U+FFFD, as a log line is read', async () => {
    const sent = (text: string, encoding: BufferEncoding) =>
      new Promise<void>((resolve, reject) => {
        const { hostname, port } = new URL(running.url);
        // Header bytes as they are: node writes a header string's characters as Latin-1 bytes.
        const value = Buffer.from(text, encoding).toString('latin1');
        const req = request({ hostname, port, path: '/api/convert', headers: { 'User-Agent': value } }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end();
      });
    seen.length = 0;
    await sent('Mozilla/5.0 (compatible; Ｚörp-bot/1.0; +https://zörp.example/bot)', 'utf8');
    await sent('Zörp-bot/1.0', 'latin1');
    await afterALaterRequest();
    expect(observedBesidesMarker().map((r) => r.userAgent)).toEqual([
      'Mozilla/5.0 (compatible; Ｚörp-bot/1.0; +https://zörp.example/bot)',
      'Z\ufffdrp-bot/1.0',
    ]);
  });
});
