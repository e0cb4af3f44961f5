import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownAddress, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let bare: Server;
let bareUrl: string;
beforeAll(async () => {
  // Its own address: the catalog's links name it, and the tool follows them.
  server = await startServer(await ownAddress());
  // A site of 2025: a page and nothing of the conventions.
  bare = createServer((req, res) => {
    if (req.url === '/') res.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>hello</h1>');
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
  bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await server.stop();
  await new Promise((resolve) => bare.close(resolve));
});

/** `npm run agent-ready -- url` as a process: its exit code and its table. */
function agentReady(url: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('node_modules/.bin/node', ['api/cli/agent-ready.ts', url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}
const rowOf = (out: string, check: string) => out.split('\n').find((l) => l.startsWith(check)) ?? `(no row ${check})`;

describe('npm run agent-ready', () => {
  it('passes our own server on every convention, and names the MCP versions it speaks', async () => {
    const { code, out } = await agentReady(server.url);
    expect(out).toMatch(/^check\s+result\s+detail\n/);
    for (const check of [
      'llms.txt',
      'Markdown for agents',
      'Link headers',
      'API catalog (RFC 9727)',
      'robots.txt Content-Usage (aipref)',
      'MCP',
      'A2A agent card',
      'OpenAPI',
    ])
      expect(rowOf(out, check), out).toMatch(/\s+pass\s+/);
    expect(rowOf(out, 'MCP')).toMatch(/\/mcp: .*2025-11-25/);
    expect(rowOf(out, 'Markdown for agents')).toMatch(/x-markdown-tokens \d+/);
    // We serve no key directory of our own (we sign no requests): skipped, not failed.
    expect(rowOf(out, 'Web Bot Auth key directory')).toMatch(/\s+skip\s+/);
    expect(code, out).toBe(0);
  });

  it('fails a site without the conventions and exits 1', async () => {
    const { code, out } = await agentReady(bareUrl);
    expect(rowOf(out, 'llms.txt')).toMatch(/\s+fail\s+GET \/llms\.txt answered 404/);
    expect(rowOf(out, 'Markdown for agents')).toMatch(/\s+fail\s+/);
    expect(rowOf(out, 'API catalog (RFC 9727)')).toMatch(/\s+fail\s+/);
    expect(rowOf(out, 'MCP')).toMatch(/\s+fail\s+/);
    expect(code).toBe(1);
  });

  it('refuses a missing or non-HTTP address with exit 2', async () => {
    const { code, out } = await agentReady('ftp://example.com');
    expect(code).toBe(2);
    expect(out).toMatch(/usage: npm run agent-ready -- https:\/\/example\.com/);
  });
});
