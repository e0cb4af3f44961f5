import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBatch } from '../api/telemetry/log-formats/index.ts';
import { load, startChild } from './lib.ts';

// Log lines ingested per second (npm run ingest-logs against a running gateway, end to end) against
// requests counted live by the same gateway (autocannon, bot and browser User-Agents), in one run;
// then the parser alone, in process.
const LINES = Number(process.env.BENCH_LINES ?? 200_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const TOKEN = 'bench-ingest-token-0123456789abcdefghij';
const UAS = [
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
  'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'curl/8.5.0',
];
const PATHS = [
  '/api/convert',
  '/llms.txt',
  '/doctrine/node-protocol',
  '/',
  '/whats-next',
  '/robots.txt',
  '/sitemap.xml',
  '/trap/x',
];

// A combined log as nginx writes it; Googlebot reads come from its published range, so they verify
// without DNS, as most of a real log's would.
const dir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
const file = join(dir, 'access.log');
const lines: string[] = [];
// Dated yesterday: the ledger counts only records of its range at the server's clock (ledgerRange).
const [y, m, d] = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10).split('-');
const day = `${d}/${['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][Number(m) - 1]}/${y}`;
for (let i = 0; i < LINES; i++) {
  const ua = UAS[i % UAS.length]!;
  const address = ua.includes('Googlebot') ? `66.249.${64 + (i % 32)}.${i % 250}` : `192.0.2.${i % 250}`;
  const second = String(i % 60).padStart(2, '0');
  lines.push(
    `${address} - - [${day}:10:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${second} +0000] "GET ${PATHS[i % PATHS.length]}?n=${i} HTTP/1.1" 200 ${1000 + (i % 5000)} "-" "${ua}"`,
  );
}
writeFileSync(file, `${lines.join('\n')}\n`);

/** CPU seconds a process has used (Linux /proc, 100 ticks a second): stable when the machine is shared. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const gateway = await startChild(['api/main.ts'], {
  DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-ingest-data-')),
  INGEST_TOKEN: TOKEN,
  LOG_LEVEL: 'warn',
});
try {
  const ingest = () =>
    new Promise<{ seconds: number; linesRead: number; counted: number }>((resolve, reject) => {
      const child = spawn('node_modules/.bin/node', ['api/cli/ingest-logs.ts', '--json', '--url', gateway.url, file], {
        env: { ...process.env, INGEST_TOKEN: TOKEN },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.once('close', (code) =>
        code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`ingest-logs exited with ${code}`)),
      );
    });
  // Warm-up on a copy under another name would count twice: the first load is the measured one.
  const cpuBefore = cpuSeconds(gateway.child.pid!);
  const first = await ingest();
  const ingestCpuUs = ((cpuSeconds(gateway.child.pid!) - cpuBefore) * 1e6) / first.linesRead;
  console.log(
    `ingest-logs: ${first.linesRead} combined log lines in ${first.seconds} s = ${Math.round(first.linesRead / first.seconds)} lines/s (${first.counted} counted), server CPU ${ingestCpuUs.toFixed(1)} µs a line`,
  );
  const again = await ingest();
  console.log(
    `ingest-logs, same file again (every batch replayed, nothing counted): ${Math.round(again.linesRead / again.seconds)} lines/s (${again.counted} counted)`,
  );

  const live = await load(`${gateway.url}/api/convert`, {
    seconds: SECONDS,
    requests: UAS.map((ua) => ({ method: 'GET', headers: { 'User-Agent': ua } })),
    pid: gateway.child.pid,
  });
  console.log(
    `live: ${Math.round(live.rps)} requests/s counted by the gateway (p99 ${live.p99} ms, ${live.cpuUs?.toFixed(1)} µs CPU each)`,
  );
  console.log(
    `ingested lines/s over live requests/s: ${(first.linesRead / first.seconds / live.rps).toFixed(2)}; server CPU, live request over ingested line: ${live.cpuUs ? (live.cpuUs / ingestCpuUs).toFixed(2) : '?'}`,
  );
} finally {
  gateway.child.kill('SIGTERM');
}

const start = process.hrtime.bigint();
const parsed = parseBatch(lines, 'combined');
const ms = Number(process.hrtime.bigint() - start) / 1e6;
console.log(
  `parser alone: ${parsed.lines.length} lines in ${ms.toFixed(0)} ms = ${Math.round((parsed.lines.length / ms) * 1000)} lines/s`,
);
