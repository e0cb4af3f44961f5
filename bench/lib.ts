import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import autocannon from 'autocannon';

export interface Figures {
  rps: number;
  p99: number;
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

/** Starts a server child process on a free port (stdout discarded) and waits until it answers. */
export async function startChild(args: string[], env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('node_modules/.bin/node', args, { env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    if (await fetch(url).then(() => true, () => false)) return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`${args.join(' ')} did not answer on ${url}`);
}

/** One autocannon run; requests are bounded by duration and stop by themselves. */
export async function load(url: string, options: { seconds: number; connections?: number; method?: string; headers?: Record<string, string>; body?: string }): Promise<Figures> {
  const result = await autocannon({
    url,
    duration: options.seconds,
    connections: options.connections ?? 10,
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers,
    body: options.body,
  });
  if (result.non2xx > 0 || result.errors > 0) console.warn(`  ${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs candidate and baseline alternately `rounds` times and reports medians and the ratio. */
export async function compare(name: string, rounds: number, candidate: () => Promise<Figures>, baseline: () => Promise<Figures>) {
  const c: Figures[] = [];
  const b: Figures[] = [];
  for (let i = 0; i < rounds; i++) {
    c.push(await candidate());
    b.push(await baseline());
  }
  const cand = { rps: median(c.map((f) => f.rps)), p99: median(c.map((f) => f.p99)) };
  const base = { rps: median(b.map((f) => f.rps)), p99: median(b.map((f) => f.p99)) };
  const ratio = cand.rps / base.rps;
  console.log(`${name}: candidate ${cand.rps.toFixed(0)} req/s (p99 ${cand.p99} ms), baseline ${base.rps.toFixed(0)} req/s (p99 ${base.p99} ms), ratio ${ratio.toFixed(3)}`);
  return { candidate: cand, baseline: base, ratio };
}
