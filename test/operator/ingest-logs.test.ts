import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recentLog } from '../helpers/log-dates.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { tempFolders } from '../helpers/temp.ts';

const TOKEN = 'test-ingest-token-0123456789abcdefghij';
const fixtures = join(import.meta.dirname, '..', 'telemetry', 'log-formats', 'fixtures');
const dir = tempFolders('ingest-logs-')();

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ INGEST_TOKEN: TOKEN });
});
afterAll(async () => {
  await server.stop();
});

interface Summary {
  files: number;
  linesRead: number;
  accepted: number;
  counted: number;
  outOfRange: number;
  skipped: Record<string, number>;
  alreadyLoaded: { batches: number; lines: number };
}

/** Runs the CLI as an operator would, against the running server. */
function run(
  args: string[],
  { stdin = '', token = TOKEN } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('node_modules/.bin/node', ['api/cli/ingest-logs.ts', '--url', server.url, ...args], {
      env: { ...process.env, INGEST_TOKEN: token },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.stdin.end(stdin);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
const summaryOf = (stdout: string) => JSON.parse(stdout) as Summary;
const googlebot = async () => {
  const traffic = await (await fetch(`${server.url}/bot-traffic.json`)).json();
  return traffic.families.find((f: { family: string }) => f.family === 'Googlebot')?.requests ?? 0;
};

describe('npm run ingest-logs', () => {
  const nginx = join(dir, 'access.log');
  const cloudfront = join(dir, 'E2EXAMPLE.2026-11-21-10.abcd1234.gz');
  const custom = join(dir, 'custom-fields.log');
  beforeAll(() => {
    // Moved to recent days: the ledger counts only what its range holds at the server's clock.
    writeFileSync(nginx, recentLog(readFileSync(join(fixtures, 'nginx-combined.log'), 'latin1')), 'latin1');
    writeFileSync(cloudfront, gzipSync(recentLog(readFileSync(join(fixtures, 'cloudfront-standard.log'), 'utf8'))));
    // Few columns in an unusual order: batches after the first must carry the #Fields: header too.
    const row = (path: string) =>
      [
        'GET',
        path,
        '200',
        'Mozilla/5.0%20(compatible;%20bingbot/2.0;%20+http://www.bing.com/bingbot.htm)',
        recentLog('2026-11-21'),
        '10:09:00',
      ].join('\t');
    writeFileSync(
      custom,
      `#Version: 1.0\n#Fields: cs-method cs-uri-stem sc-status cs(User-Agent) date time\n${row('/a')}\n${row('/b')}\n${row('/c')}\n`,
    );
  });

  it('loads plain and gzipped files in batches and reports lines read, counted and skipped with reasons', async () => {
    const { code, stdout, stderr } = await run(['--json', '--batch-lines', '2', nginx, cloudfront, custom]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(summaryOf(stdout)).toMatchObject({
      files: 3,
      linesRead: 8 + 5 + 3,
      accepted: 6 + 4 + 3,
      // The nginx log's line without a User-Agent is an unknown client's, counted apart from bots.
      counted: 5 + 3 + 3,
      outOfRange: 0,
      skipped: { 'not-a-request': 1, unparseable: 1, 'bad-status': 1 },
      alreadyLoaded: { batches: 0, lines: 0 },
    });
    const traffic = await (await fetch(`${server.url}/bot-traffic.json`)).json();
    const bing = traffic.families.find((f: { family: string }) => f.family === 'Bingbot');
    expect(bing.topPaths.map((p: { path: string }) => p.path).sort()).toEqual(['/a', '/b', '/c']);
  });

  it('counts a file loaded twice once', async () => {
    const before = await googlebot();
    const { code, stdout } = await run(['--json', '--batch-lines', '2', nginx, cloudfront]);
    expect(code).toBe(0);
    expect(summaryOf(stdout)).toMatchObject({
      linesRead: 13,
      counted: 0,
      alreadyLoaded: { batches: 4 + 3, lines: 13 },
    });
    expect(await googlebot()).toBe(before);
  });

  it('reads standard input with -, and prints a readable summary', async () => {
    const { code, stdout } = await run(['-'], {
      stdin: recentLog(readFileSync(join(fixtures, 'cloudflare-http-requests.ndjson'), 'utf8')),
    });
    expect(code).toBe(0);
    expect(stdout).toContain('read 6 lines from 1 file(s)');
    expect(stdout).toContain('counted 3 (crawler and bait reads) of 3 requests accepted');
    expect(stdout).toMatch(/skipped 3: .*bad-status 1/);
  });

  it('reads lines that end in a CR alone, and reports each line past MAX_LINE_BYTES as too-long, whatever it holds', async () => {
    const crawler = (i: number) =>
      `66.249.66.${i} - - [21/Nov/2026:10:00:0${i} +0000] "GET /cr/${i} HTTP/1.1" 200 5 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"`;
    const file = join(dir, 'cr-only.log');
    // Two lines, 4 MiB of NUL bytes (a torn write) that no line end cuts, two lines, 4 MiB of spaces.
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from(recentLog(`${crawler(1)}\r${crawler(2)}\r`)),
        Buffer.alloc(4 * 1024 * 1024),
        Buffer.from(recentLog(`\r${crawler(3)}\r${crawler(4)}\r`)),
        Buffer.alloc(4 * 1024 * 1024, ' '),
      ]),
    );
    const before = await googlebot();
    const { code, stdout, stderr } = await run(['--json', file]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(summaryOf(stdout)).toMatchObject({
      files: 1,
      linesRead: 6,
      accepted: 4,
      counted: 4,
      skipped: { 'too-long': 2 },
    });
    expect(await googlebot()).toBe(before + 4);
  });

  it('stops with a clear message on a wrong token; a missing file is reported, not fatal to the others', async () => {
    const refused = await run([nginx], { token: 'x'.repeat(40) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('answered 401');
    const missing = await run(['--json', '--batch-lines', '2', join(dir, 'nope.log'), custom]);
    expect(missing.code).toBe(0);
    expect(missing.stderr).toContain('nope.log');
    expect(summaryOf(missing.stdout)).toMatchObject({
      files: 1,
      alreadyLoaded: { lines: 3 },
      skipped: { 'unreadable file': 1 },
    });
  });
});
