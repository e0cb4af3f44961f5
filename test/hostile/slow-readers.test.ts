import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { bodyOf, rawClient, statusOf, tcpState } from './raw.ts';

let server: TestServer;
const SEND_TIMEOUT_MS = 1500;
const PER_CLIENT = 6;

beforeAll(async () => {
  server = await startServer({
    SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS),
    MAX_CONNECTIONS_PER_CLIENT: String(PER_CLIENT),
  });
});
afterAll(() => server?.stop());

/** A connection from `localAddress` that says nothing. */
const idle = (localAddress: string) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect({ port: Number(new URL(server.url).port), host: '127.0.0.1', localAddress });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });

describe('slow and stalled clients', () => {
  it('a reader that stops taking bytes is closed after SEND_TIMEOUT_MS, and an ordinary read is unharmed meanwhile', async () => {
    // The server runs in this process: a listener added per queued answer would warn here.
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    const stalled = await rawClient(server, { localAddress: '127.0.0.20' });
    // Pipelined reads of the wall, never read back: the server's answers fill the kernel's buffers, then stall.
    stalled.socket.pause();
    const asked = 2000;
    stalled.socket.write('GET /bot-wall.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(asked));
    const ordinary = await fetch(`${server.url}/bot-wall.json`);
    expect(ordinary.status).toBe(200);
    // A paused socket cannot see its end (the server's FIN waits behind answers it never takes): the
    // kernel's state of the server's end says when the server closed it.
    await waitFor(() => tcpState(stalled.socket, 'server'), {
      until: (state) => state !== '01',
      timeoutMs: SEND_TIMEOUT_MS * 2 + 2000,
      intervalMs: 100,
      what: 'the server closing the stalled reader',
    });
    // Read what the server had sent before it gave up.
    stalled.socket.resume();
    await stalled.closed;
    expect(stalled.received().split('HTTP/1.1 200').length - 1).toBeLessThan(asked);
    process.off('warning', onWarning);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('a reader that takes bytes slowly, never stopping as long as SEND_TIMEOUT_MS, is not closed', async () => {
    const socket = connect({ port: Number(new URL(server.url).port), host: '127.0.0.1', localAddress: '127.0.0.25' });
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.pause();
    // Far more than the kernel's buffers hold (about 28 MB): the server's writes wait on this reader.
    const asked = 1000;
    socket.write('GET /api/convert HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n'.repeat(asked));
    let answers = 0;
    let tail = '';
    const take = (chunk: Buffer) => {
      const text = tail + chunk.toString('latin1');
      answers += text.split('HTTP/1.1 200 ').length - 1;
      tail = text.slice(-16);
    };
    // 256 KiB every 100 ms, for three times SEND_TIMEOUT_MS: a stall would have been ended twice over.
    const started = Date.now();
    while (Date.now() - started < 3 * SEND_TIMEOUT_MS) {
      await new Promise((r) => setTimeout(r, 100));
      const chunk = socket.read(256 * 1024) as Buffer | null;
      if (chunk) take(chunk);
    }
    expect(answers).toBeGreaterThan(0);
    // Then all the rest at once: every answer arrives, so the connection was never closed.
    socket.on('data', take);
    socket.resume();
    let closed = false;
    socket.once('close', () => (closed = true));
    await waitFor(() => closed || answers >= asked, { what: 'every answer, or the connection closed' });
    expect([closed, answers]).toEqual([false, asked]);
    socket.destroy();
  });

  it(`a client past ${PER_CLIENT} open connections is answered 429 TOO_MANY_CONNECTIONS and closed, not reset; others are not held back`, async () => {
    const held = await Promise.all(Array.from({ length: PER_CLIENT }, () => idle('127.0.0.21')));
    try {
      const extra = await rawClient(server, { localAddress: '127.0.0.21' });
      extra.socket.write('GET /bot-wall.json HTTP/1.1\r\nHost: x\r\n\r\n');
      const answer = await extra.until(/\r\n\r\n\{.*\}$/s);
      expect(statusOf(answer)).toBe(429);
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(answer).toMatch(/\r\ncontent-type: application\/problem\+json/i);
      expect(bodyOf(answer)).toMatchObject({ code: 'TOO_MANY_CONNECTIONS', limit: PER_CLIENT });
      expect(await extra.closed).toEqual({});
      // Another address is another client.
      const other = await rawClient(server, { localAddress: '127.0.0.22' });
      other.socket.write('GET /bot-wall.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(statusOf(await other.until(/^HTTP\/1\.1 \d{3}/))).toBe(200);
      // A closed connection frees its place.
      held.pop()!.destroy();
      const again = async () => {
        const client = await rawClient(server, { localAddress: '127.0.0.21' });
        client.socket.write('GET /bot-wall.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        return statusOf(await client.until(/^HTTP\/1\.1 \d{3}/));
      };
      // Once the server has seen the close (429 until then).
      expect(await waitFor(again, { until: (status) => status === 200, what: 'the place the close freed' })).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('a connection past the cap that never sends its request is closed within seconds', async () => {
    const held = await Promise.all(Array.from({ length: PER_CLIENT }, () => idle('127.0.0.23')));
    try {
      const silent = await rawClient(server, { localAddress: '127.0.0.23' });
      const started = Date.now();
      await silent.closed;
      expect(Date.now() - started).toBeLessThan(8000);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('readers of the wall while another is still being sent share one answer (one Buffer); a reader alone is answered fresh', async () => {
    const read = async () =>
      (
        (await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'Accept-Encoding': 'identity' } })).json()) as {
          generatedAt: string;
        }
      ).generatedAt;
    const alone = await read();
    // A millisecond later (the answer's time is in milliseconds), a reader alone gets a fresh one.
    await waitFor(() => Date.now() > Date.parse(alone), { intervalMs: 1, what: 'the next millisecond' });
    expect(await read()).not.toBe(alone);
    const stalled = await rawClient(server, { localAddress: '127.0.0.24' });
    stalled.socket.pause();
    stalled.socket.write('GET /bot-wall.json HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n'.repeat(2000));
    // Two reads within the answer's second share it, once the stalled reader's answers are being
    // sent; a loaded machine may take longer, so a pair that took a second or more proves nothing.
    let first = '';
    let firstAt = 0;
    await waitFor(
      async () => {
        const started = Date.now();
        first = await read();
        firstAt = Date.now();
        const second = await read();
        return Date.now() - started < 900 && second === first;
      },
      { what: 'two reads within a second sharing one answer' },
    );
    // An answer more than a second old is not shared again (it was kept before the first read came back).
    await waitFor(() => Date.now() - firstAt > 1010, { what: 'the shared answer a second old' });
    expect(await read()).not.toBe(first);
    stalled.socket.destroy();
  });
});
