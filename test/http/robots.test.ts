import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { robotsVersion } from '../../api/telemetry/robots/robots.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const CLAUDE =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
const TOKEN = 'test-ingest-token-0123456789abcdefghij';
const BLOG = 'User-agent: GPTBot\nDisallow: /members/\n\nUser-agent: *\nAllow: /\n';

let server: TestServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-dir-'));
  writeFileSync(join(dir, 'blog.example.txt'), BLOG);
  server = await startServer({ WRITE_RATE_LIMIT: '0', INGEST_TOKEN: TOKEN, ROBOTS_TXT_DIR: dir });
});
afterAll(async () => {
  await server.stop();
});

const as = (ua: string, path: string) =>
  fetch(server.url + path, { headers: { 'User-Agent': ua } }).then(async (r) => (await r.arrayBuffer(), r.status));
const wall = async () =>
  (await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'User-Agent': FIREFOX } })).json()) as Record<
    string,
    any
  >;
const robotsOf = async (family: string) =>
  ((await wall()).botTraffic.families as any[]).find((f) => f.family === family)?.robotsTxt;

describe('robots.txt judged per crawler, over HTTP', () => {
  it('names the Disallow line of the served robots.txt that a GPTBot request broke, with its path, count and version', async () => {
    const served = await (await fetch(`${server.url}/robots.txt`)).text();
    const line = served.split('\n').indexOf('Disallow: /trap/') + 1;
    expect(line).toBeGreaterThan(0);
    await as(GPT, '/trap/one');
    await as(GPT, '/robots.txt');
    await as(GPT, '/trap/one');
    await as(GPT, '/trap/two');
    await as(GPT, '/llms.txt');
    const r = await robotsOf('GPTBot');
    expect(r).toMatchObject({
      compliance: 'violating',
      judged: 5,
      violations: 3,
      violationsAfterFetch: 2,
      fetchedRobotsTxt: true,
    });
    expect(r.rules).toEqual([
      {
        host: 'site',
        version: robotsVersion(served),
        line,
        rule: 'Disallow: /trap/',
        agent: '*',
        requests: 3,
        afterFetch: 2,
        paths: [
          { path: '/trap/one', requests: 2 },
          { path: '/trap/two', requests: 1 },
        ],
      },
    ]);
    const doc = await wall();
    expect(doc.robotsTxt.versions).toContainEqual({ host: 'site', version: robotsVersion(served) });
    expect(doc.species.find((s: any) => s.species === 'GPTBot').robots).toMatchObject({
      compliance: 'violating',
      violations: 3,
    });
  });

  it("shows the rule on the wall page: the compliance column and the family's robots.txt view", async () => {
    await as(CLAUDE, '/docs/api');
    const html = await (await fetch(`${server.url}/bot-wall`, { headers: { 'User-Agent': FIREFOX } })).text();
    const section = html.slice(html.indexOf('id="robots"'), html.indexOf('Funnel: from presence to catch'));
    expect(section).toMatch(
      /data-robots-family="GPTBot" data-compliance="violating">.*3 disallowed requests.*<code>Disallow: \/trap\/<\/code>/,
    );
    expect(section).toMatch(/data-robots-family="ClaudeBot" data-compliance="compliant"/);
    const row = html.slice(html.indexOf('<li data-family="GPTBot"'));
    expect(row.slice(0, row.indexOf('</li>'))).toMatch(/Disallow rules broken.*<code>\/trap\/one<\/code> × 2/);
  });

  it("judges ingested lines of another host by that host's file from ROBOTS_TXT_DIR", async () => {
    const lines = [
      { method: 'GET', path: '/members/list', host: 'blog.example', userAgent: GPT, status: 200 },
      { method: 'GET', path: '/members/list', host: 'blog.example', userAgent: CLAUDE, status: 200 },
      { method: 'GET', path: '/members/list', host: 'nobody-told.example', userAgent: GPT, status: 200 },
    ];
    const res = await fetch(`${server.url}/api/telemetry/ingest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ lines }),
    });
    expect(res.status).toBeLessThan(300);
    const r = await robotsOf('GPTBot');
    expect(r.rules).toContainEqual({
      host: 'blog.example',
      version: robotsVersion(BLOG),
      line: 2,
      rule: 'Disallow: /members/',
      agent: 'gptbot',
      requests: 1,
      afterFetch: 0,
      paths: [{ path: '/members/list', requests: 1 }],
    });
    // ClaudeBot falls to `*`, which allows all; the unknown host is not judged.
    expect((await robotsOf('ClaudeBot')).violations).toBe(0);
    expect(r.judged).toBe(6);
  });
});

describe('ROBOTS_TXT_DIR', () => {
  it('refuses to start with one line naming the folder when it cannot be read', async () => {
    const missing = join(tmpdir(), `no-robots-${process.pid}-${Date.now()}`);
    const child = spawn('node_modules/.bin/node', ['api/main.ts'], {
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: '0',
        DIST_DIR: TEST_DIST,
        DATA_DIR: mkdtempSync(join(tmpdir(), 'robots-data-')),
        LOG_LEVEL: 'info',
        ROBOTS_TXT_DIR: missing,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    expect(code).toBe(1);
    const lines = text.split('\n').filter(Boolean);
    expect(
      lines.some((l) => l.includes(`ROBOTS_TXT_DIR: cannot read ${missing}`)),
      text,
    ).toBe(true);
    expect(text).not.toMatch(/\n\s+at /);
  });
});
