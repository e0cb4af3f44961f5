import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadContent } from '../api/content/load.ts';
import { createClassifier } from '../api/telemetry/classify.ts';
import { compare, load, startChild } from './lib.ts';

// Gateway throughput with telemetry on a mix of bot and browser User-Agents, against a bare
// node:http server with the same bytes; then the classifier's cost per request.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const UAS = [
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)',
  'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'curl/8.5.0',
];

const mixed = (url: string, pid: number | undefined) => load(url, { seconds: SECONDS, requests: UAS.map((ua) => ({ method: 'GET', headers: { 'User-Agent': ua } })), pid });

const gateway = await startChild(['api/main.ts'], { DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-tel-')) });
const bare = await startChild(['bench/bare-server.ts', 'dist/client/api/convert', 'application/json; charset=utf-8']);
try {
  const r = await compare('GET /api/convert, mixed User-Agents', ROUNDS, () => mixed(`${gateway.url}/api/convert`, gateway.child.pid), () => mixed(`${bare.url}/`, bare.child.pid));
  console.log(`target ratio >= 0.85: ${r.ratio >= 0.85 ? 'met' : 'NOT met'}`);
} finally {
  gateway.child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
}

const { botFamilies } = await loadContent('content');
const time = (n: number, fn: (i: number) => void) => {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  return Number(process.hrtime.bigint() - start) / 1000 / n;
};
const classify = createClassifier(botFamilies.families, 1_000_000);
const uncached = time(20_000, (i) => classify(`${UAS[i % UAS.length]} build/${i}`));
const cached = time(200_000, (i) => classify(UAS[i % UAS.length]!));
console.log(`classification: uncached ${uncached.toFixed(2)} µs per User-Agent, cached ${cached.toFixed(3)} µs`);
