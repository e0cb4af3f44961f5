import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { get } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import autocannon from 'autocannon';
import { sharedDnsResponder } from '../test/helpers/dns-responder.ts';

// Servers run on the last CPU and the load generator (this process) on the others, so the two never
// trade cores mid-run: on this 2-core machine, unpinned runs of the same server moved by ±25%.
// bench:scale opts out: its point is processes spreading over the cores.
const CPUS = availableParallelism();
const SERVER_CPU = String(CPUS - 1);
let pinning: boolean | undefined;
function pinSelf(): boolean {
  pinning ??=
    CPUS > 1 &&
    (() => {
      try {
        execFileSync('taskset', ['-p', '-c', `0-${CPUS - 2}`, String(process.pid)], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    })();
  return pinning;
}
/** Runs node with `args`, on the server CPU (this process keeps the others) when pinned and pinning works here. */
export function spawnNode(args: string[], options: SpawnOptions, { pinned = true } = {}): ChildProcess {
  return pinned && pinSelf()
    ? spawn('taskset', ['-c', SERVER_CPU, 'node_modules/.bin/node', ...args], options)
    : spawn('node_modules/.bin/node', args, options);
}

export interface Figures {
  rps: number;
  p99: number;
  /** The server's CPU time per answered request, in µs, when its process was measured. */
  cpuUs?: number | undefined;
}

/** CPU seconds (user + system) a process has used so far; Linux /proc, 100 ticks a second. */
function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** A free port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server child process on a free port (stdout discarded) and waits until it is ready: its
 * /readyz answers, and not 503 (the service answers 503 STARTING until its store is open; a bare
 * server answers anything). A bench that loaded it before measured 503s, copied a 503's headers
 * into a bare twin, and (before api/telemetry/classification/tick-shape.ts) left node's nextTick megamorphic
 * for the rest of the run. Its reverse-DNS lookups (crawler claims, ingested log records) go to a
 * responder on loopback (DNS_SERVERS, test/helpers/dns-responder.ts), never to the machine's resolver.
 */
export async function startChild(
  args: string[],
  env: Record<string, string> = {},
  { pinned = true } = {},
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const dns = env.DNS_SERVERS ?? (await sharedDnsResponder()).address;
  const child = spawnNode(
    args,
    {
      env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', DNS_SERVERS: dns },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
    { pinned },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    const status = await fetch(`${url}/readyz`).then(
      async (answer) => (await answer.arrayBuffer(), answer.status),
      () => 0,
    );
    if (status !== 0 && status !== 503) return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`${args.join(' ')} was not ready on ${url} within 120 s`);
}

export interface LoadOptions {
  seconds: number;
  connections?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Replace `[<id>]` in the body with a new id per request (autocannon's idReplacement): oaths need a name of their own. */
  idReplacement?: boolean;
  /** Requests to cycle through (autocannon's `requests`), instead of one. */
  requests?: { method: string; headers?: Record<string, string> }[];
  /** The server process, to measure its CPU time per request. */
  pid?: number | undefined;
}

/**
 * One autocannon run; requests are bounded by duration and stop by themselves. With `pid`, the
 * server's CPU time per request is measured too: it does not depend on whether the load generator
 * or the server was the bottleneck, which req/s on a shared 2-core machine does.
 */
export async function load(url: string, options: LoadOptions): Promise<Figures> {
  const before = cpuSeconds(options.pid);
  const result = await autocannon({
    url,
    duration: options.seconds,
    connections: options.connections ?? 10,
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers,
    body: options.body,
    idReplacement: options.idReplacement ?? false,
    ...(options.requests ? { requests: options.requests as autocannon.Request[] } : {}),
  });
  const after = cpuSeconds(options.pid);
  if (result.non2xx > 0 || result.errors > 0)
    console.warn(
      `  ${url}: ${result.non2xx} non-2xx (${Object.entries(result.statusCodeStats ?? {})
        .filter(([code]) => !code.startsWith('2'))
        .map(([code, { count }]) => `${count} × ${code}`)
        .join(', ')}), ${result.errors} errors`,
    );
  const cpuUs =
    before !== null && after !== null && result.requests.total > 0
      ? ((after - before) * 1e6) / result.requests.total
      : undefined;
  return { rps: result.requests.average, p99: result.latency.p99, cpuUs };
}

export const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * A 95% interval for the median of `xs`, free of any assumption on their distribution: the order
 * statistics x(j) and x(n+1-j) for the largest j with P(Binomial(n, 1/2) < j) ≤ 2.5% (each sample
 * falls below the true median with probability 1/2). For 20 pairs, the 6th and 15th smallest.
 * Undefined below 6 samples (no such interval reaches 95%).
 */
export function medianInterval(xs: number[]): [number, number] | undefined {
  const n = xs.length;
  const sorted = [...xs].sort((a, b) => a - b);
  let atMost = 0; // P(X <= k), X ~ Binomial(n, 1/2)
  let term = 0.5 ** n; // P(X = k)
  let j = 0;
  for (let k = 0; k < Math.floor(n / 2); k++) {
    atMost += term;
    if (atMost > 0.025) break;
    j = k + 1; // P(X < j) <= 2.5%
    term = (term * (n - k)) / (k + 1);
  }
  return j === 0 ? undefined : [sorted[j - 1]!, sorted[n - j]!];
}

/**
 * Warms both up (`warmups` untimed runs of each), runs them back to back `rounds` times (which goes first alternates), and
 * reports median req/s and p99 of each and the median of the per-round ratios: a pair measured
 * seconds apart shares the machine's drift, which a ratio of medians over the whole run does not.
 */
export async function compare(
  name: string,
  rounds: number,
  candidate: () => Promise<Figures>,
  baseline: () => Promise<Figures>,
  warmups = 1,
) {
  const c: Figures[] = [];
  const b: Figures[] = [];
  // Untimed runs of each first (one unless the caller asks for more): a dynamic route's first seconds
  // run before the JIT has warmed Astro's render path (here POST /api/omip/score took 600 µs of CPU a
  // request, then 270).
  for (let i = 0; i < warmups; i++) {
    await candidate();
    await baseline();
  }
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      c.push(await candidate());
      b.push(await baseline());
    } else {
      b.push(await baseline());
      c.push(await candidate());
    }
  }
  const cand = { rps: median(c.map((f) => f.rps)), p99: median(c.map((f) => f.p99)) };
  const base = { rps: median(b.map((f) => f.rps)), p99: median(b.map((f) => f.p99)) };
  const ratios = c.map((f, i) => f.rps / b[i]!.rps);
  const ratio = median(ratios);
  console.log(
    `${name}: candidate ${cand.rps.toFixed(0)} req/s (p99 ${cand.p99} ms), baseline ${base.rps.toFixed(0)} req/s (p99 ${base.p99} ms), ` +
      `ratio ${ratio.toFixed(3)} (median of ${rounds} rounds, ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}${pinning ? '; servers pinned to one CPU' : ''})`,
  );
  // Server CPU per request, baseline over candidate: the req/s ratio a CPU-bound server would reach.
  // Per pair too, as for req/s: the machine's speed drifts between pairs by more than the gap measured.
  let cpuRatio: number | undefined;
  let cpuInterval: [number, number] | undefined;
  if (c.every((f) => f.cpuUs !== undefined) && b.every((f) => f.cpuUs !== undefined)) {
    const cc = median(c.map((f) => f.cpuUs!));
    const bc = median(b.map((f) => f.cpuUs!));
    const pairs = c.map((f, i) => b[i]!.cpuUs! / f.cpuUs!);
    cpuRatio = median(pairs);
    cpuInterval = medianInterval(pairs);
    console.log(
      `  server CPU per request: candidate ${cc.toFixed(1)} µs, baseline ${bc.toFixed(1)} µs, ratio ${cpuRatio.toFixed(3)} (median of the rounds' ratios, ${Math.min(...pairs).toFixed(2)}-${Math.max(...pairs).toFixed(2)}${cpuInterval ? `; 95% interval of the median ${cpuInterval[0].toFixed(3)}-${cpuInterval[1].toFixed(3)}` : ''})`,
    );
  }
  return { candidate: cand, baseline: base, ratio, cpuRatio, cpuInterval };
}

/** Headers the transport writes by itself (or that differ per answer): not part of what a twin copies. */
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

/**
 * A bare node:http server sending the same bytes as `url` answers with an identity body: that very
 * body (the gateway rewrites a document's links to the address it serves from, so the build's file
 * can differ) and the same response headers (security headers, ETag, Cache-Control...), so the
 * comparison measures the gateway's work per request, not the size of its answer.
 */
export async function startBareTwin(url: string): Promise<{ url: string; child: ChildProcess }> {
  // node:http, not fetch: its rawHeaders keep the names as sent, in their order.
  const { headers, body } = await new Promise<{ headers: [string, string][]; body: Buffer }>((resolve, reject) =>
    get(url, { headers: { 'Accept-Encoding': 'identity' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const pairs: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
        resolve({
          headers: pairs.filter(([name]) => !TRANSPORT_HEADERS.has(name.toLowerCase())),
          body: Buffer.concat(chunks),
        });
      });
    }).on('error', reject),
  );
  const file = join(mkdtempSync(join(tmpdir(), 'bare-twin-')), 'body');
  writeFileSync(file, body);
  return startChild(['bench/bare-server.ts', file], { BARE_HEADERS: JSON.stringify(headers) });
}
