import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setPriority } from 'node:os';
import { createBandwidth, type Bandwidth } from '../api/gateway/bandwidth.ts';
import { LINGER_MS } from '../api/gateway/lingering.ts';
import { readFileSync } from 'node:fs';
import { CRAFTED_CONTAINERS, craftedContainer, wavHead, wavWithInfo } from '../test/helpers/audio-files.ts';
import { crawlerAgents } from '../test/helpers/crawler-agents.ts';
import { startDnsResponder } from '../test/helpers/dns-responder.ts';
import { freePort, median, spawnNode } from './lib.ts';

// bench:hostile: one server, every hostile-client attack this gateway bounds, one after the other.
// For each: the server's RSS and heap growth (after a full collection, once it has settled) per
// 10,000 hostile requests, and the p99 of an ordinary GET /api/convert during the attack against
// the same server idle in the seconds just before it. Targets: growth <= 20 MB per 10,000; p99
// during <= 3x idle; no 5xx. Floods of bytes are also sent to a bare sink (see `control`).
const SCALE = Number(process.env.BENCH_HOSTILE_SCALE ?? 1);
const n = (count: number) => Math.max(1, Math.round(count * SCALE));
const MB = 1024 * 1024;
const IDLE_MS = 2000;
/** The pace of the cheap attacks (requests a second). */
const RATE = Number(process.env.BENCH_HOSTILE_RATE ?? 500);

/**
 * BENCH_HOSTILE_PIN=1: the server and the ordinary client on the last core, the attacker (this
 * process) on the others, as an attacker on another machine would be (spawnNode in lib.ts).
 * Unpinned, the three share both cores, and on loopback the kernel's work of moving the attacker's
 * bytes runs in whichever process enters the kernel next, often the server's own sends.
 */
const PIN = process.env.BENCH_HOSTILE_PIN === '1';

/**
 * While a flood runs (the attacks with a control: unpaced, as fast as this process can generate
 * connections and bytes), this process has the lowest CPU priority, nice 19, so that its own work
 * waits for the server and the ordinary client, as it would on a machine of its own; its time in
 * the kernel moving bytes through loopback waits too, which the bare-sink control, run the same
 * way, shows. The paced attacks take little CPU and keep equal priority (niced, their timers could
 * slip and send their requests in bursts). BENCH_HOSTILE_NICE=0: the floods at equal priority too.
 * Raising the priority back after a flood needs root: without it the bench says so and does not.
 */
const NICE = process.env.BENCH_HOSTILE_NICE !== '0' && process.getuid?.() === 0;
if (process.env.BENCH_HOSTILE_NICE !== '0' && !NICE)
  console.error('bench:hostile: not root, so the attacker runs at the same priority as the server');
async function asAttacker<T>(run: () => Promise<T>): Promise<T> {
  if (NICE) setPriority(19);
  try {
    return await run();
  } finally {
    if (NICE) setPriority(0);
  }
}
const node = (args: string[], options: SpawnOptions): ChildProcess => spawnNode(args, options, { pinned: PIN });

/** BENCH_HOSTILE_SERVER_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof": node flags for the server (its stdout is then shown, for --trace-gc). */
const SERVER_FLAGS = process.env.BENCH_HOSTILE_SERVER_FLAGS?.split(' ').filter(Boolean) ?? [];

const port = await freePort();
// Crawler claims (rows 2 and 10) start reverse-DNS lookups: they go to a responder on loopback that
// answers NXDOMAIN at once (a failed claim), never to the machine's resolver.
const dns = await startDnsResponder();
const server: ChildProcess = node(['--expose-gc', ...SERVER_FLAGS, 'bench/hostile-server.ts'], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: ':memory:',
    LOG_LEVEL: 'warn',
    WRITE_RATE_LIMIT: '5',
    BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
    DNS_SERVERS: dns.address,
  },
  stdio: ['ignore', SERVER_FLAGS.length ? 'inherit' : 'ignore', 'inherit', 'ipc'],
});
const url = await new Promise<string>((resolve, reject) => {
  server.once('message', (m: { url?: string }) => (m.url ? resolve(m.url) : reject(new Error('no url'))));
  server.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});
/** The server's memory after a full collection, and its event-loop delay and CPU share since the last report. */
interface ServerReport {
  rss: number;
  heapUsed: number;
  /** What V8 has committed for its heap, used or not. */
  heapTotal: number;
  loopP99: number;
  loopMax: number;
  cpuShare: number;
  /** The server's open connections. */
  connections: number;
}
const memory = () =>
  new Promise<ServerReport>((resolve) => {
    server.once('message', (m: ServerReport) => resolve(m));
    server.send('memory');
  });

/** Client addresses on the loopback /8: write limits are per address, as an attacker with many would have. */
const address = (i: number) => `127.${1 + ((i >> 16) & 127)}.${(i >> 8) & 255}.${i & 255 || 1}`;

/** Where the attacks go: the server, or for a control run, the bare sink (bench/sink-server.ts). */
let target = port;
/** Body bytes the attack wrote to its sockets (what the kernel took, not what the server read). */
let bodyBytesSent = 0;

/** One raw exchange: writes `head` and `body`, then either leaves at once or waits for the status line. */
function exchange(options: {
  head: string;
  body?: Buffer | (() => Buffer | null);
  leave?: boolean;
  localAddress?: string;
  timeoutMs?: number;
  link?: Bandwidth;
}): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect({
      port: target,
      host: '127.0.0.1',
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    });
    let answer = '';
    let status = 0;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(finish, options.timeoutMs ?? 10_000);
    socket.on('error', finish);
    socket.on('close', finish);
    socket.on('data', (d) => {
      answer += d.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (match) {
        status = Number(match[1]);
        finish();
      }
    });
    socket.on('connect', () => {
      socket.write(options.head);
      const body = options.body;
      if (typeof body === 'function') {
        // Keeps sending chunks while the server reads them, until the function has no more or an answer came.
        const pump = () => {
          for (;;) {
            if (status || socket.destroyed) return;
            const chunk = body();
            if (chunk === null) return;
            bodyBytesSent += chunk.length;
            const written = socket.write(chunk);
            const wait = options.link?.take(chunk.length) ?? 0;
            if (wait > 0)
              return void setTimeout(() => (socket.writableNeedDrain ? socket.once('drain', pump) : pump()), wait);
            if (!written) return void socket.once('drain', pump);
          }
        };
        pump();
      } else if (body) {
        bodyBytesSent += body.length;
        socket.write(body);
      }
      if (options.leave) finish();
    });
  });
}

/**
 * Runs `total` tasks, `concurrency` at a time; with `perSecond`, request i starts no earlier than
 * i / perSecond s after the first, so a cheap attack measures what each request costs the others
 * rather than how a CPU saturated by sheer volume queues (the attacker shares this machine's 2 cores).
 */
async function pool(
  total: number,
  concurrency: number,
  task: (i: number) => Promise<number>,
  perSecond?: number,
  until = Infinity,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total && performance.now() < until) {
        const i = next++;
        if (perSecond) {
          const wait = started + (i * 1000) / perSecond - performance.now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        }
        const status = await task(i);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  return statuses;
}

/**
 * The ordinary traffic whose p99 an attack must not ruin: GET /api/convert from two keep-alive
 * connections, one request after the other, in a process of its own (bench/hostile-probe.ts), so
 * that the attack generator's work here does not count as the server's latency.
 */
function ordinary(seconds?: number): { ready: Promise<void>; stop: () => Promise<number> } {
  const probe = node(['bench/hostile-probe.ts', url], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const ready = new Promise<void>((resolve) => probe.once('message', () => resolve()));
  const result = new Promise<number>((resolve, reject) => {
    probe.on('message', (m: { p99?: number }) => m.p99 !== undefined && resolve(m.p99));
    probe.once('exit', (code) => reject(new Error(`the ordinary probe exited with ${code}`)));
  });
  const started = ready.then(() =>
    seconds === undefined ? undefined : new Promise((r) => setTimeout(r, seconds * 1000)),
  );
  return {
    ready,
    stop: async () => {
      await ready;
      if (seconds !== undefined) await started;
      probe.send('stop');
      return result;
    },
  };
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const deepBody = `{"document":${nested(3000)}}`;
const BOUNDARY = 'b';
const tinyParts = Buffer.from(
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n`.repeat(840_000) + `--${BOUNDARY}--\r\n`,
);

/** A body of `size` MB sent in 64 KiB chunks. */
const megabytes = (size: number) => {
  const chunk = Buffer.alloc(64 * 1024, 0);
  let sent = 0;
  return () => (sent >= size * MB ? null : ((sent += chunk.length), chunk));
};
const fiftyMegabytes = () => megabytes(50);
/** `buffer` in 64 KiB slices, once: a body a link can pace. */
const sliced = (buffer: Buffer) => {
  let at = 0;
  return () => (at >= buffer.length ? null : buffer.subarray(at, (at += 64 * 1024)));
};
/**
 * The floods again from an attacker behind a 1 Gbit/s link (its body bytes, over all its
 * connections, paced to 125 MB/s): on loopback one process pushes 1-2 GB/s, and moving that is
 * this 2-core machine's work whatever serves it (the control column); a client on the internet
 * has a link, and a gigabit is a generous one.
 */
const ATTACKER_LINK = 'attacker on a 1 Gbit/s link';
/**
 * A flood stops after 1,000 requests or FLOOD_SECONDS (BENCH_HOSTILE_FLOOD_SECONDS, 20 s), whichever
 * comes first: the server answers a client flooding refused uploads at the pace its lingering
 * connections drain (api/gateway/lingering.ts), a few a second, where the bare sink answers as fast
 * as the attacker sends.
 */
const FLOOD_MS = Number(process.env.BENCH_HOSTILE_FLOOD_SECONDS ?? 20) * 1000;
const attackerLink = () => createBandwidth(125_000_000);
/** A WAV head with a title for a 49 MB data chunk that follows. */
const bigWavHead = (dataBytes: number) => wavHead({ title: 'Big upload', artist: 'Bench' }, dataBytes);

const SIXTY_KB = 'z'.repeat(60_000);
const crawlers = crawlerAgents(200);
const INVISIBLE = ['\u202E', '\u200B', '\u200D', '\u2066', '\uFEFF'];
/** BENCH_HOSTILE_ONLY=2,3,9: only the attacks of those rows (the numbers each row prints). */
const ONLY = process.env.BENCH_HOSTILE_ONLY
  ? new Set(process.env.BENCH_HOSTILE_ONLY.split(',').map((r) => r.trim()))
  : null;

interface Attack {
  name: string;
  /** Set-up that is not part of the attack (not measured). */
  prepare?: () => Promise<unknown>;
  run: () => Promise<Map<number, number>>;
  /** How long the server may need to drop what the attack left (idle timers). */
  settleMs?: number;
  /**
   * A bandwidth flood: run it a second time against the bare sink while the ordinary client keeps
   * timing the idle server, so the table shows what the flood's bytes alone cost this machine.
   */
  control?: boolean;
}

/**
 * Row 26: readers that take the first chunk of the wall and then nothing. Prints the
 * server's peak RSS over the idle one while they hang, and how long until the server has closed
 * them all (SEND_TIMEOUT_MS; MAX_CONNECTIONS_PER_CLIENT answers the rest 429).
 */
async function stalledReaders(): Promise<Map<number, number>> {
  const total = n(6000);
  const base = await memory();
  const sockets: Socket[] = [];
  const statuses = new Map<number, number>();
  await pool(total, 64, (i) =>
    new Promise<number>((resolve) => {
      const path = i % 2 ? '/bot-wall' : '/bot-wall.json';
      const socket = connect({ port: target, host: '127.0.0.1', localAddress: `127.0.${100 + (i % 30)}.1` });
      sockets.push(socket);
      socket.on('error', () => resolve(0));
      socket.once('data', (chunk) => {
        socket.pause();
        resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 0));
      });
      socket.once('connect', () =>
        socket.write(
          `GET ${path} HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36\r\nAccept-Encoding: identity\r\n\r\n`,
        ),
      );
    }).then((status) => {
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      return status;
    }),
  );
  const opened = performance.now();
  let peak = base.rss;
  let gone = NaN;
  for (let second = 0; second < 90; second++) {
    const now = await memory();
    peak = Math.max(peak, now.rss);
    // The ordinary probe's two connections stay.
    if (now.connections <= 4) {
      gone = (performance.now() - opened) / 1000;
      break;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  console.log(
    `row 26: ${total} stalled readers: server RSS peak +${mb(peak - base.rss)} MB over ${mb(base.rss)} MB; all closed by the server ${Number.isNaN(gone) ? 'NOT within 90 s' : `${gone.toFixed(1)} s after the last opened`}`,
  );
  for (const socket of sockets) socket.destroy();
  return statuses;
}

/** The sink of the control runs, started on first use. */
let sink: { port: number; child: ChildProcess } | undefined;
async function sinkPort(): Promise<number> {
  if (!sink) {
    const child = node(['bench/sink-server.ts'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const { port: sinkAt } = await new Promise<{ port: number }>((resolve) => child.once('message', resolve));
    sink = { port: sinkAt, child };
  }
  return sink.port;
}

const attacks: Attack[] = [
  {
    name: 'row 1: GET /mcp (Accept: text/event-stream), half of them leave at once',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) =>
          exchange({
            head: 'GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: application/json, text/event-stream\r\n\r\n',
            leave: i % 2 === 0,
          }),
        RATE,
      ),
  },
  {
    name: 'row 11: POST half a JSON body, then hang up',
    run: () =>
      pool(
        n(10_000),
        4,
        () =>
          exchange({
            head: 'POST /api/citizenship/oath HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{"name":"hal',
            leave: true,
          }),
        RATE,
      ),
  },
  ...[1, 2, 3].map((round) => ({
    name: `row 4: 50 MB uploads, 8 in parallel, from an address over its write limit${round === 2 ? ' (again: growth is a plateau, not per request)' : round === 3 ? `, ${ATTACKER_LINK}` : ''}`,
    control: true,
    settleMs: LINGER_MS + 1000,
    run: async () => {
      const link = round === 3 ? attackerLink() : undefined;
      const attacker = '127.0.0.3';
      const statuses = new Map<number, number>();
      const until = performance.now() + FLOOD_MS;
      // The write budget refills over a minute: spend it again every 40 uploads (some seconds) so the address stays over it.
      for (let done = 0; done < n(1_000) && performance.now() < until; done += 40) {
        for (let i = 0; i < 6; i++)
          await exchange({
            head: 'POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{"title":"spend"}',
            localAddress: attacker,
          });
        const part = await pool(
          Math.min(40, n(1_000) - done),
          8,
          () =>
            exchange({
              head: `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/wav\r\nContent-Length: ${50 * MB}\r\n\r\n`,
              body: fiftyMegabytes(),
              localAddress: attacker,
              ...(link ? { link } : {}),
            }),
          undefined,
          until,
        );
        for (const [s, c] of part) statuses.set(s, (statuses.get(s) ?? 0) + c);
      }
      return statuses;
    },
  })),
  ...[false, true].map((linked) => ({
    name: `row 4: uploads that stall after 1 MB, 16 at once from one address${linked ? `, ${ATTACKER_LINK}` : ''}`,
    control: true,
    settleMs: Math.max(IDLE_MS, LINGER_MS) + 1000,
    run: () => {
      const link = linked ? attackerLink() : undefined;
      const stalled = Buffer.alloc(MB, 0xff);
      return pool(
        n(1_000),
        16,
        () =>
          exchange({
            head: `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\nContent-Length: ${50 * MB}\r\n\r\n`,
            body: link ? sliced(stalled) : stalled,
            localAddress: address(100_000),
            ...(link ? { link } : {}),
          }),
        undefined,
        performance.now() + FLOOD_MS,
      );
    },
  })),
  {
    // The caps per client do not hold it back: an IPv6 client has a /48 of /64s to rotate through.
    name: 'row 4: 100 MB uploads refused for their size (413), 8 in parallel, each from a new address',
    control: true,
    settleMs: LINGER_MS + 1000,
    run: () =>
      pool(
        n(1_000),
        8,
        (i) =>
          exchange({
            head: `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/wav\r\nContent-Length: ${100 * MB}\r\n\r\n`,
            body: fiftyMegabytes(),
            localAddress: address(200_000 + i),
          }),
        undefined,
        performance.now() + FLOOD_MS,
      ),
  },
  {
    name: 'row 4: 8 accepted 49 MB WAV uploads in parallel (8 addresses), streamed to disk',
    run: () =>
      pool(8, 8, (i) => {
        const rest = megabytes(49);
        let first = true;
        return exchange({
          head: `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: audio/wav\r\nContent-Length: ${bigWavHead(49 * MB).length + 49 * MB}\r\n\r\n`,
          body: () => (first ? ((first = false), bigWavHead(49 * MB)) : rest()),
          localAddress: address(200_000 + i),
          timeoutMs: 120_000,
        });
      }),
  },
  {
    name: 'row 5: multipart bodies of 840,000 tiny parts (52 MB)',
    run: () =>
      pool(n(20), 2, (i) =>
        exchange({
          head: `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${tinyParts.length}\r\n\r\n`,
          body: tinyParts,
          localAddress: address(300_000 + i),
          timeoutMs: 60_000,
        }),
      ),
  },
  {
    name: 'row 6: POST /api/omip/fingerprint nested 3,000 deep',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) =>
          exchange({
            head: `POST /api/omip/fingerprint HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${deepBody.length}\r\n\r\n${deepBody}`,
            localAddress: address(400_000 + Math.floor(i / 5)),
          }),
        RATE,
      ),
  },
  {
    name: 'row 7: TRACE, PROPFIND and CONNECT on pages, routes and /mcp',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) =>
          exchange({
            head: `${['TRACE /nope', 'TRACE /bot-wall', 'TRACE /mcp', 'PROPFIND /', 'CONNECT example.com:443'][i % 5]} HTTP/1.1\r\nHost: x\r\n\r\n`,
          }),
        RATE,
      ),
  },
  {
    name: 'row 8: GET /api/omip/log?first=N over 2,000+ receipts',
    prepare: () => {
      const plan = { steps: [{ action: 'read', tool: 'read_convert' }], weights: { meaning: 0.9, growth: 0.1 } };
      const body = JSON.stringify({
        agents: [
          { id: 'sovereign-a', proposal: { plan } },
          { id: 'sovereign-b', proposal: { plan } },
        ],
      });
      return pool(2_500, 8, (i) =>
        exchange({
          head: `POST /api/omip/dual-exchange HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
          localAddress: address(500_000 + Math.floor(i / 5)),
        }),
      );
    },
    run: () =>
      pool(
        n(10_000),
        4,
        (i) => exchange({ head: `GET /api/omip/log?first=${1 + ((i * 7919) % 1999)} HTTP/1.1\r\nHost: x\r\n\r\n` }),
        RATE,
      ),
  },
  {
    name: 'row 2: GET with 15 KB paths from 220 crawler families (20 real, 200 invented)',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) =>
          exchange({
            head: `GET /deep/${i.toString(16)}${'a'.repeat(15_000)} HTTP/1.1\r\nHost: x\r\nUser-Agent: ${crawlers[i % crawlers.length]}\r\n\r\n`,
          }),
        RATE,
      ),
  },
  {
    name: 'row 3: POST /api/omip/fingerprint, 60 KB documents, each under a new Idempotency-Key',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) => {
          // Spliced, not stringified: 500 JSON.stringify calls a second of 60 KB would be the attacker's CPU taken from the server's two cores.
          const body = `{"document":{"i":${i},"text":"${SIXTY_KB}"}}`;
          return exchange({
            head: `POST /api/omip/fingerprint HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: ${randomUUID()}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
            localAddress: address(800_000 + Math.floor(i / 4)),
          });
        },
        RATE,
      ),
  },
  {
    name: 'row 9: distinct 8 KB bot User-Agents',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) =>
          exchange({
            head: `GET /api/convert HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 (compatible; XyzBot-${i}/1.0; +https://x.example/${randomBytes(24).toString('hex')}) ${randomBytes(4000).toString('hex')}\r\n\r\n`,
          }),
        RATE,
      ),
  },
  {
    name: 'row 10: Googlebot claims from 10,000 loopback addresses (40 /24 networks; a loopback DNS responder answers NXDOMAIN)',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) =>
          exchange({
            head: `GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)\r\n\r\n`,
            localAddress: address(900_000 + i),
          }),
        RATE,
      ),
  },
  {
    name: 'row 13: oaths and messages with U+202E, zero-width characters and a leading BOM (422)',
    run: () =>
      pool(
        n(10_000),
        4,
        (i) => {
          const text = `${INVISIBLE[i % INVISIBLE.length]}name-${i}`;
          const [path, body] =
            i % 2 === 0
              ? ['/api/citizenship/oath', JSON.stringify({ name: text, purpose: 'p' })]
              : ['/api/intelligence/message', JSON.stringify({ name: 'n', message: text })];
          return exchange({
            head: `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
            localAddress: address(1_000_000 + Math.floor(i / 4)),
          });
        },
        RATE,
      ),
  },
  {
    name: `row 26: ${n(6000)} stalled readers of /bot-wall.json and /bot-wall from 30 addresses (they read the first chunk, then nothing)`,
    // A wall of about the documented size: many families, long paths.
    prepare: () =>
      pool(n(2000), 16, (i) =>
        exchange({
          head: `GET /${'w'.repeat(2000)}/${i % 16} HTTP/1.1\r\nHost: x\r\nUser-Agent: ${crawlers[i % crawlers.length]}\r\nConnection: close\r\n\r\n`,
        }),
      ),
    run: stalledReaders,
    settleMs: 1000,
  },
].filter((attack) => ONLY === null || ONLY.has(/^row (\d+)/.exec(attack.name)?.[1] ?? ''));

const mb = (bytes: number) => (bytes / MB).toFixed(1);

/**
 * How many times each attack's p99 is compared with idle: BENCH_HOSTILE_ROUNDS, else 3. The same
 * row moved by ±1× between runs of this 2-core machine (the paced rows too: row 7 gave 1.4-2.0×
 * in earlier runs and 3.6× in one, with one round each): the median of several rounds says more.
 */
const ROUNDS = Number(process.env.BENCH_HOSTILE_ROUNDS ?? 3);
/** "; median of 3: 2.4× (1.9-3.1×)" for several ratios, nothing for one. */
function ofRounds(ratios: number[]): string {
  if (ratios.length < 2) return '';
  return `; median of ${ratios.length}: ${median(ratios).toFixed(1)}× (${Math.min(...ratios).toFixed(1)}-${Math.max(...ratios).toFixed(1)}×)`;
}

/**
 * One round of an attack: the ordinary p99 idle just before (the machine's own speed drifts over a
 * run, 0.5 to 2 ms here), then during the attack; for a flood, again during the same flood sent to
 * the bare sink; and the server's memory before it and after it settled.
 */
async function measure(attack: Attack) {
  const idle = await ordinary(3).stop();
  const before = await memory();
  const probe = ordinary();
  await probe.ready;
  bodyBytesSent = 0;
  const started = performance.now();
  const statuses = await (attack.control ? asAttacker(attack.run) : attack.run());
  const seconds = (performance.now() - started) / 1000;
  const p99 = await probe.stop();
  await new Promise((r) => setTimeout(r, attack.settleMs ?? 500));
  const after = await memory();
  const sent = bodyBytesSent;
  let control: number | undefined;
  if (attack.control) {
    target = await sinkPort();
    const idleProbe = ordinary();
    await idleProbe.ready;
    await asAttacker(attack.run);
    control = await idleProbe.stop();
    target = port;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { idle, p99, control, statuses, seconds, sent, before, after };
}
/** CPU seconds the server process has used (every thread: the audio parse threads too), from /proc. */
function serverCpu(): number {
  const stat = readFileSync(`/proc/${server.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Crafted uploads: 4 MB audio files made of a container's smallest elements, two at a time (the per-client
 * cap), against a real 4 MB WAV in the same run: the server's CPU per upload (all its threads, from
 * /proc) and the ordinary GET /api/convert p99 meanwhile against idle just before. Targets: <= 1 s
 * of CPU per crafted upload, p99 during < 100 ms.
 */
async function craftedAudio(): Promise<void> {
  const uploads = n(10);
  const wavSeconds = Math.floor((4 * MB) / 8000);
  const files: [string, Buffer][] = [
    ['a real 4 MB WAV (the baseline)', wavWithInfo({ title: 'Baseline', artist: 'Bench' }, wavSeconds)],
    ...CRAFTED_CONTAINERS.map((kind): [string, Buffer] => [
      `4 MB ${kind} of tiny elements`,
      craftedContainer(kind, 4 * MB),
    ]),
    ['16 MB Matroska of 2-byte EBML Voids', craftedContainer('Matroska', 16 * MB)],
  ];
  console.log('');
  console.log(
    `| crafted upload (${uploads} of each, 2 at a time, each from its own address) | answers | server CPU per upload | × the real WAV's | ordinary p99 idle, just before | ordinary p99 during (× idle) |`,
  );
  console.log('|---|---|---|---|---|---|');
  let baseline = 0;
  let next = 0;
  for (const [name, file] of files) {
    const idle = await ordinary(2).stop();
    const probe = ordinary();
    await probe.ready;
    const before = serverCpu();
    const statuses = await pool(uploads, 2, () =>
      exchange({
        head: `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${file.length}\r\nConnection: close\r\n\r\n`,
        body: file,
        localAddress: address(10_000 + next++),
        timeoutMs: 60_000,
      }),
    );
    const perUpload = ((serverCpu() - before) / uploads) * 1000;
    const p99 = await probe.stop();
    if (baseline === 0) baseline = perUpload;
    const answers = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([st, c]) => `${st}×${c}`)
      .join(' ');
    console.log(
      `| ${name} | ${answers} | ${perUpload.toFixed(0)} ms | ${(perUpload / baseline).toFixed(1)}× | ${idle} ms | ${p99} ms (${(p99 / idle).toFixed(1)}×) |`,
    );
  }
}

const loop = (r: ServerReport) =>
  `${r.loopP99.toFixed(1)} / ${r.loopMax.toFixed(1)} ms, ${Math.round(r.cpuShare * 100)}% of a core`;
try {
  // Warm up, then the idle p99 of the same ordinary request on the same server.
  await ordinary(2).stop();
  await memory();
  const idleP99 = await ordinary(5).stop();
  const idle = await memory();
  console.log(
    `idle: GET /api/convert p99 ${idleP99} ms (2 keep-alive connections, one request after the other, 5 s); ${loop(idle)}; floods sent at ${NICE ? 'nice 19' : 'the same priority'}${PIN ? ', on a core of its own' : ''}`,
  );
  console.log(
    '| attack | hostile requests | answers | RSS growth | heap growth | per 10,000 (RSS / heap) | ordinary p99 idle, just before | ordinary p99 during (× idle) | server loop delay p99 / max, CPU | body bytes sent | the same flood on a bare sink: ordinary p99 (× idle) | 5xx (not 501) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const attack of attacks) {
    await attack.prepare?.();
    const first = await measure(attack);
    const { before, after, statuses, seconds, sent } = first;
    const rounds = [first];
    for (let i = 1; i < ROUNDS; i++) rounds.push(await measure(attack));
    const requests = [...statuses.values()].reduce((sum, c) => sum + c, 0);
    // A few hundred requests (the paced floods, the big uploads) say nothing per 10,000: their growth is a plateau, bounded by caps.
    const per = 10_000 / requests;
    const perTenThousand =
      requests < 1_000
        ? `not extrapolated from ${requests}`
        : `${mb((after.rss - before.rss) * per)} / ${mb((after.heapUsed - before.heapUsed) * per)} MB`;
    // 501 is the answer the brief asks for a method outside the known set; any other 5xx is a failure.
    const fives = [...statuses].filter(([s]) => s >= 500 && s !== 501).reduce((sum, [, c]) => sum + c, 0);
    const answers = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, c]) => `${s === 0 ? 'left' : s}×${c}`)
      .join(' ');
    const control = attack.control
      ? `${first.control} ms (${(first.control! / first.idle).toFixed(1)}×)${ofRounds(rounds.map((r) => r.control! / r.idle))}`
      : '—';
    console.log(
      `| ${attack.name} | ${requests} in ${seconds.toFixed(1)} s | ${answers} | ${mb(after.rss - before.rss)} MB | ${mb(after.heapUsed - before.heapUsed)} MB (committed ${mb(after.heapTotal - before.heapTotal)} MB) | ` +
        `${perTenThousand} | ${first.idle} ms | ${first.p99} ms (${(first.p99 / first.idle).toFixed(1)}×)${ofRounds(rounds.map((r) => r.p99 / r.idle))} | ${loop(after)} | ${mb(sent)} MB | ${control} | ${fives} |`,
    );
  }
  if (ONLY === null || ONLY.has('36')) await craftedAudio();
  const end = await memory();
  console.log(`server at the end: RSS ${mb(end.rss)} MB, heap ${mb(end.heapUsed)} MB`);
} finally {
  server.kill('SIGTERM');
  sink?.child.kill();
}
