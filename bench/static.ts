import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compare, load, startBareTwin, startChild } from './lib.ts';

// GET /api/convert through the gateway against a bare node:http server with the same bytes, once
// with a browser's User-Agent and once with a crawler's (a crawler's read is counted by telemetry).
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const AGENTS: [string, string, number][] = [
  // name, User-Agent, target: gateway CPU per request at most this many times the bare server's
  [
    'browser',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    1.1,
  ],
  [
    'GPTBot',
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
    1.1,
  ],
];

// An agent that asks for Markdown (Anthropic's user-initiated fetcher).
const AGENT =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)';

const gateway = await startChild(['api/main.ts'], {
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-')),
});
const bare = await startBareTwin(`${gateway.url}/api/convert`);
try {
  for (const [name, userAgent, target] of AGENTS) {
    const run = (url: string, pid: number | undefined) =>
      load(url, { seconds: SECONDS, connections: CONNECTIONS, headers: { 'User-Agent': userAgent }, pid });
    const r = await compare(
      `static GET /api/convert, ${name} User-Agent, ${CONNECTIONS} connections`,
      ROUNDS,
      () => run(`${gateway.url}/api/convert`, gateway.child.pid),
      () => run(`${bare.url}/`, bare.child.pid),
    );
    const cpu = r.cpuRatio === undefined ? undefined : 1 / r.cpuRatio;
    console.log(
      `  ${name}: gateway CPU per request ${cpu?.toFixed(2) ?? '?'}× the bare server's; target ≤ ${target}×: ${cpu !== undefined && cpu <= target ? 'met' : 'NOT met'}`,
    );
  }
  // A page's Markdown (Accept: text/markdown) against its HTML, the same page through the same
  // gateway: both negotiate (an agent's Accept and a browser's), both are counted by telemetry.
  const page = '/whats-next';
  const reader = (accept: string) => () =>
    load(`${gateway.url}${page}`, {
      seconds: SECONDS,
      connections: CONNECTIONS,
      headers: { 'User-Agent': AGENT, Accept: accept },
      pid: gateway.child.pid,
    });
  const r = await compare(
    `static GET ${page} as Markdown against as HTML, ${CONNECTIONS} connections`,
    ROUNDS,
    reader('text/markdown, text/html;q=0.5'),
    reader('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'),
  );
  const cpu = r.cpuRatio === undefined ? undefined : 1 / r.cpuRatio;
  console.log(
    `  Markdown: gateway CPU per request ${cpu?.toFixed(2) ?? '?'}× the HTML read's; target within 10% (≤ 1.1×): ${cpu !== undefined && cpu <= 1.1 ? 'met' : 'NOT met'}`,
  );
} finally {
  gateway.child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
}
