import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LINGER_BYTES_PER_SECOND,
  LINGER_MAX_CONNECTIONS,
  LINGER_MAX_PER_CLIENT,
  LINGER_MAX_WAITING,
  LINGER_MAX_WAITING_PER_CLIENT,
  LINGER_MS,
} from '../../api/gateway/lingering.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { wavWithInfo } from '../helpers/audio-files.ts';
import { waitFor } from '../helpers/wait.ts';
import { rawClient, statusOf, tcpState, type RawClient } from './raw.ts';

// What the server reads of uploads is bounded in bytes a second, over all clients
// together, so a flood of uploads costs it a bounded share of its CPU; the clients wait (TCP).
const RATE = 64 * 1024;
let server: ServerProcess;
beforeAll(async () => {
  // The idle timeout is shorter than the wait one 64 KiB chunk costs at this rate.
  server = await startServerProcess({
    DATA_DIR: ':memory:',
    WRITE_RATE_LIMIT: '0',
    UPLOAD_BYTES_PER_SECOND: String(RATE),
    BODY_IDLE_TIMEOUT_MS: '500',
  });
});
afterAll(async () => {
  await server.stop();
});

const upload = (seconds: number) =>
  fetch(`${server.url}/api/ingress/audio`, {
    method: 'POST',
    headers: { 'Content-Type': 'audio/wav' },
    body: new Uint8Array(wavWithInfo({ title: `Slow ${seconds}`, artist: 'A' }, seconds)),
  });

describe('upload bandwidth', () => {
  it('reads two uploads at once no faster than UPLOAD_BYTES_PER_SECOND together, and does not take its own hold (longer than the idle timeout) for a stalled client', async () => {
    const started = performance.now();
    // Two bodies of 128,000 bytes of audio (8,000 bytes a second of WAV).
    const answers = await Promise.all([upload(16), upload(16)]);
    const elapsed = performance.now() - started;
    expect(answers.map((r) => r.status)).toEqual([201, 201]);
    // The bound: 256,000 bytes at 64 KiB a second, less the quarter second of burst and the last
    // 64 KiB chunk of each body (read before its wait): at least 1.6 s. At full speed: some ms.
    expect(elapsed).toBeGreaterThan(((2 * 128_000 - RATE / 4 - 2 * 64 * 1024) / RATE) * 1000);
  });
});

/** The server's open TCP sockets (its listening socket included), read from /proc. */
const serverSockets = () =>
  readdirSync(`/proc/${server.child.pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${server.child.pid}/fd/${fd}`).startsWith('socket:');
    } catch {
      return false; // closed between the listing and the read
    }
  }).length;

describe('refused connections kept open to read what their clients still send', () => {
  /** A refused upload (declared past the 50 MB limit: 413 at once, its body left unread) from a half-open client, which keeps its side open after the server's FIN, so the server lingers until LINGER_MS (5 s) or a cap. */
  async function refused(localAddress: string): Promise<RawClient> {
    const client = await rawClient(server, { allowHalfOpen: true, localAddress });
    client.socket.write(
      `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n${'x'.repeat(100)}`,
    );
    return client;
  }
  /** `count` refused uploads, one after the other, each from the address `from()` gives. */
  async function refusedMany(count: number, from: () => string): Promise<RawClient[]> {
    const clients: RawClient[] = [];
    for (let i = 0; i < count; i++) clients.push(await refused(from()));
    return clients;
  }
  /** A whole problem answer. */
  const ANSWER = /\r\n\r\n\{.*\}$/s;
  const answered = async (clients: RawClient[]) => {
    const answers = await Promise.all(clients.map((client) => client.until(ANSWER)));
    expect(answers.map(statusOf)).toEqual(answers.map(() => 413));
  };

  /** What `client` received within `ms`: nothing yet, or its answer. */
  const within = (client: RawClient, ms: number) => client.until(ANSWER, ms).then(statusOf, () => 'nothing');

  it("keeps at most LINGER_MAX_PER_CLIENT lingering and LINGER_MAX_WAITING_PER_CLIENT waiting from one client: past both its flood closes its own oldest, not another client's", async () => {
    const baseline = serverSockets();
    const other = await refused('127.0.9.2');
    await answered([other]);
    const flood = (count: number) => refusedMany(count, () => '127.0.9.1');
    const lingering = await flood(LINGER_MAX_PER_CLIENT);
    await answered(lingering);
    // The client holds its cap of lingering connections: its next refusals wait, unanswered and unread.
    const waiting = await flood(LINGER_MAX_WAITING_PER_CLIENT);
    expect(await Promise.all(waiting.map((client) => within(client, 300)))).toEqual(waiting.map(() => 'nothing'));
    // Past the waiting cap: answered at once, each closing the client's oldest lingering connection.
    const past = await flood(16);
    await answered(past);
    await waitFor(serverSockets, {
      until: (open) => open <= baseline + 1 + LINGER_MAX_PER_CLIENT + LINGER_MAX_WAITING_PER_CLIENT,
      timeoutMs: 1500,
      what: "the flooding client's connections under its caps",
    });
    // The other client's connection, older than all of the flood's, is still open.
    expect(tcpState(other.socket), 'not reset').not.toBeNull();
    // No slot came free (the flood's clients all keep their side open): the waiting ones are answered after LINGER_MS.
    expect(await Promise.all(waiting.map((client) => within(client, LINGER_MS + 2000)))).toEqual(
      waiting.map(() => 413),
    );
    for (const client of [other, ...lingering, ...waiting, ...past]) client.socket.destroy();
  });

  it("answers a waiting refusal as soon as one of its client's lingering connections closes, and another client's at once", async () => {
    const lingering = await refusedMany(LINGER_MAX_PER_CLIENT, () => '127.0.9.3');
    await answered(lingering);
    const next = await refused('127.0.9.3');
    expect(await within(next, 300)).toBe('nothing');
    // A GET that sends a body is refused 413 before reading it, and so waits its turn too.
    const get = await rawClient(server, { allowHalfOpen: true, localAddress: '127.0.9.3' });
    get.socket.write(
      `GET /api/convert HTTP/1.1\r\nHost: x\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n${'x'.repeat(100)}`,
    );
    expect(await within(get, 300)).toBe('nothing');
    const stranger = await refused('127.0.9.4');
    expect(await within(stranger, 300)).toBe(413);
    // Its client hangs up lingering connections: the server closes them, and each slot is the oldest waiting answer's.
    const freed = performance.now();
    lingering[0]!.socket.end();
    expect(await within(next, LINGER_MS)).toBe(413);
    expect(await within(get, 300)).toBe('nothing');
    lingering[1]!.socket.end();
    expect(await within(get, LINGER_MS)).toBe(413);
    // Without the hand-over each would wait out LINGER_MS (5 s).
    expect(performance.now() - freed).toBeLessThan(LINGER_MS / 2);
    for (const client of [...lingering, next, get, stranger]) client.socket.destroy();
  });

  it('keeps at most LINGER_MAX_CONNECTIONS of them and LINGER_MAX_WAITING waiting: past both the oldest is closed, each after its answer', async () => {
    const baseline = serverSockets();
    // Each from an address of its own, so that the caps per client do not apply.
    let next = 0;
    const ownAddress = () => {
      const i = next++;
      return `127.0.${10 + (i >> 7)}.${(i & 127) + 1}`;
    };
    const flood = (count: number) => refusedMany(count, ownAddress);
    const lingering = await flood(LINGER_MAX_CONNECTIONS);
    await answered(lingering);
    const waiting = await flood(LINGER_MAX_WAITING);
    expect(await Promise.all(waiting.slice(-8).map((client) => within(client, 300)))).toEqual(Array(8).fill('nothing'));
    const past = await flood(64);
    await answered(past);
    // Without the caps, all of them stay open for 5 s; with them, the oldest close as the newest come.
    await waitFor(serverSockets, {
      until: (open) => open <= baseline + LINGER_MAX_CONNECTIONS + LINGER_MAX_WAITING,
      timeoutMs: 1500,
      what: 'the lingering and waiting connections under their caps',
    });
    // Their turn comes as the lingering ones run out their time.
    expect(await Promise.all(waiting.map((client) => within(client, LINGER_MS + 2000)))).toEqual(
      waiting.map(() => 413),
    );
    for (const client of [...lingering, ...waiting, ...past]) client.socket.destroy();
  });
});

/** Bytes the server process has read through read(2) and recv(2), its sockets' included (/proc/PID/io). */
const serverRead = () => Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${server.child.pid}/io`, 'utf8'))![1]);

describe('what refused clients still send', () => {
  it('is read no faster than LINGER_BYTES_PER_SECOND over all of them, past the one read that brought each request', async () => {
    const count = 200;
    const before = serverRead();
    const started = performance.now();
    const clients: RawClient[] = [];
    for (let i = 0; i < count; i++) {
      // Each from an address of its own, so that none is closed for its client's cap.
      const client = await rawClient(server, {
        allowHalfOpen: true,
        localAddress: `127.0.${20 + (i >> 7)}.${(i & 127) + 1}`,
      });
      // 413 at once; the megabyte behind the head is in the server's receive buffer before its answer.
      client.socket.write(
        `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n${'x'.repeat(1024 * 1024)}`,
      );
      clients.push(client);
    }
    const answers = await Promise.all(clients.map((client) => client.until(/\r\n\r\n\{.*\}$/s)));
    expect(answers.map(statusOf)).toEqual(answers.map(() => 413));
    // A rate is measured over time: until the server has read half a second of the budget past the
    // first reads (200 clients offer 200 MB); reads that stopped never get there.
    await waitFor(() => serverRead() - before, {
      until: (n) => n >= 2 * count * 64 * 1024 + LINGER_BYTES_PER_SECOND / 2,
      timeoutMs: 10_000,
      what: 'half a second of the lingering budget read',
    });
    const read = serverRead() - before;
    const seconds = (performance.now() - started) / 1000;
    // Each connection's first read (at most 64 KiB: its head and the start of its body) comes before its
    // answer; after the answers, the shared budget: its rate, its quarter-second burst and one chunk per
    // connection (each reads its next chunk when its wait ends, before the budget counts it).
    // Pauses that let each socket read on until its buffer was full: 61 MB here, twice the bound.
    expect(read).toBeLessThanOrEqual(2 * count * 64 * 1024 + LINGER_BYTES_PER_SECOND * (seconds + 0.25));
    for (const client of clients) client.socket.destroy();
  });
});
