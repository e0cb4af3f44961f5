import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib.ts';
import { sharedDnsResponder } from '../helpers/dns-responder.ts';

// `npm run dev` as an editor runs it, on a temporary copy of content/.
const content = mkdtempSync(join(tmpdir(), 'dev-content-'));
cpSync('content', content, { recursive: true });
let child: ChildProcess;
let url: string;
const logs: string[] = [];

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  // Vitest's own variables would put Astro's Vite into test mode, where it serves no page.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_ENV' && k !== 'TEST'),
  );
  // Reverse-DNS lookups, if any request started one, go to the loopback responder.
  const DNS_SERVERS = (await sharedDnsResponder()).address;
  child = spawn('npm', ['run', 'dev', '--silent'], {
    env: { ...env, PORT: String(port), SITE_URL: url, CONTENT_DIR: content, LOG_LEVEL: 'info', DNS_SERVERS },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  await new Promise<void>((resolve, reject) => {
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
        if (line.includes('"msg":"dev server ready"')) resolve();
      });
    }
    child.once('exit', (code) => reject(new Error(`npm run dev exited with ${code}:\n${logs.join('\n')}`)));
  });
}, 120_000);
afterAll(async () => {
  // npm and the node it started form one process group.
  if (child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
});

const text = async (path: string, init?: RequestInit) => {
  const res = await fetch(url + path, init);
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
};
const edit = (file: string, change: (text: string) => string) =>
  writeFileSync(join(content, file), change(readFileSync(join(content, file), 'utf8')));

describe('npm run dev', () => {
  it('serves engine routes, live telemetry and /bot-wall, and takes an oath', async () => {
    expect(await text('/api/omip/health')).toMatchObject({ status: 200, type: 'application/json; charset=utf-8' });
    expect(await text('/api/omip/primitives')).toMatchObject({ status: 200, type: 'application/json; charset=utf-8' });
    // Our source files are not served, as Vite alone would.
    expect((await text('/api/config')).status).toBe(404);
    const oath = await fetch(`${url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'dev-editor', purpose: 'preview' }),
    });
    expect(oath.status).toBe(201);
    await text('/api/convert', {
      headers: { 'User-Agent': 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' },
    });
    const wall = await text('/bot-wall');
    expect(wall.status).toBe(200);
    expect(wall.type).toMatch(/^text\/html/);
    expect(wall.body).toContain('GPTBot');
    expect((await text('/api/citizens')).body).toContain('dev-editor');
  }, 60_000);

  it('shows an edit to a doctrine file on the next request', async () => {
    const before = await text('/doctrine/node-protocol');
    expect(before.status).toBe(200);
    expect(before.body).not.toContain('Edited in preview');
    edit('doctrine/node-protocol.md', (t) => `${t}\nEdited in preview: a paragraph an editor just wrote.\n`);
    const after = await text('/doctrine/node-protocol');
    expect(after.status).toBe(200);
    expect(after.body).toContain('Edited in preview: a paragraph an editor just wrote.');
  }, 60_000);

  it('shows a broken content file by file and field without stopping, and recovers when it is fixed', async () => {
    const original = readFileSync(join(content, 'track.yaml'), 'utf8');
    edit('track.yaml', (t) => t.replace(/^title:.*$/m, ''));
    const broken = await text('/');
    expect(broken.status).toBe(500);
    expect(broken.body).toMatch(/track\.yaml: title: /);
    // The engine keeps answering with the last good content, and the oath taken before is still there.
    expect((await text('/api/citizens')).body).toContain('dev-editor');

    writeFileSync(join(content, 'track.yaml'), original.replace(/^title: (.*)$/m, 'title: $1 (edited)'));
    const fixed = await text('/');
    expect(fixed.status).toBe(200);
    expect(child.exitCode).toBeNull();
    // A data change restarts the engine in process on the same memory store.
    expect((await text('/api/citizens')).body).toContain('dev-editor');
  }, 60_000);
});
