import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIST } from '../helpers/env.ts';
import { HTML_CSP, OTHER_CSP } from '../../api/http/security-headers.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// A baseline of security headers on every answer, whoever made it.
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:' });
});
afterAll(async () => {
  await server.stop();
});

const html =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

describe('security headers', () => {
  it('uses exactly the policies of the brief', () => {
    expect(HTML_CSP).toBe(html);
    expect(OTHER_CSP).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it.each([
    ['/', 'GET', 'prebuilt page', 'html'],
    ['/whats-next', 'GET', 'prebuilt page', 'html'],
    ['/nope', 'GET', '404 page', 'html'],
    ['/bot-wall', 'GET', 'page Astro renders', 'html'],
    ['/api/convert', 'GET', 'prebuilt JSON', 'other'],
    ['/llms.txt', 'GET', 'prebuilt text', 'other'],
    ['/api/citizens', 'GET', 'live JSON', 'other'],
    ['/bot-wall.json', 'GET', 'live JSON', 'other'],
    ['/api/nope', 'GET', 'problem', 'other'],
    ['/api/omip/score', 'POST', 'problem from a route', 'other'],
    ['/mcp', 'GET', 'MCP problem', 'other'],
    ['/llms.txt', 'OPTIONS', 'OPTIONS', 'other'],
  ])('%s (%s, %s) carries nosniff, a referrer policy and the %s policy', async (path, method, _what, kind) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      redirect: 'manual',
      ...(method === 'POST' ? { headers: { 'Content-Type': 'application/json' }, body: '{}' } : {}),
    });
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin');
    expect(res.headers.get('content-security-policy')).toBe(kind === 'html' ? html : OTHER_CSP);
    const type = res.headers.get('content-type');
    if (type?.startsWith('text/')) expect(type).toMatch(/;\s*charset=utf-8/i);
  });

  it('gives /bot-wall a charset', async () => {
    const res = await fetch(`${server.url}/bot-wall`);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  });

  it('keeps one of each header on a page Astro renders', async () => {
    const res = await fetch(`${server.url}/bot-wall`);
    expect(res.headers.get('content-security-policy')!.split(',')).toHaveLength(1);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it("writes them into the build's _headers for a CDN: every path, and the stricter policy on JSON", () => {
    const rules = readFileSync(join(TEST_DIST, 'client', '_headers'), 'utf8');
    const block = (path: string) =>
      new RegExp(`^${path.replace(/[.*+?^$()|[\]\\/]/g, '\\$&')}\n((?:  .*\n)+)`, 'm').exec(rules)?.[1] ?? '';
    expect(block('/*')).toContain('  X-Content-Type-Options: nosniff\n');
    expect(block('/*')).toContain(`  Content-Security-Policy: ${html}\n`);
    expect(block('/*')).toContain('  Referrer-Policy: strict-origin-when-cross-origin\n');
    expect(block('/api/convert')).toContain(`  Content-Security-Policy: ${OTHER_CSP}\n`);
    // And each document's Link and Content-Usage, as the gateway sends them.
    expect(block('/whats-next')).toMatch(/^  Link: .*<\/whats-next\.md>; rel="alternate"; type="text\/markdown"/m);
    expect(block('/whats-next')).toContain('  Content-Usage: train-ai=y, search=y\n');
    expect(block('/bot-wall.md')).toContain('  Content-Usage: train-ai=n, search=y\n');
  });
});
