import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib.ts';
import { withOrigin } from '../../api/gateway/static-site.ts';
import { FLOW_SITE_URL } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { run } from '../helpers/run.ts';

// PORT changed because 4321 was busy, and the documents still sent agents to 4321. The
// test build is made with SITE_URL = FLOW_SITE_URL; these servers run under another address.

/** The documents whose links agents follow, and the page Astro renders on demand. */
const DOCUMENTS = [
  '/api/convert',
  '/agents/kit.json',
  '/.well-known/agent-card.json',
  '/llms.txt',
  '/whats-next.json',
  '/openapi.json',
  '/sitemap.xml',
  '/robots.txt',
  '/',
  '/docs/api',
];

/** A raw GET (fetch would decode the body and choose the coding itself). */
function get(server: TestServer, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(server.url + path, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    },
  );
}
const text = async (server: TestServer, path: string) => (await get(server, path)).body.toString('utf8');

/** Checks that every document names `site` and never the build's address. */
async function expectDocumentsName(server: TestServer, site: string) {
  const convert = JSON.parse(await text(server, '/api/convert'));
  expect(convert.api).toBe(`${site}/api/convert`);
  expect(convert.curl).toContain(`'${site}/api/citizenship/oath'`);
  expect(convert.python_oneshot).toContain(`BASE = "${site}"`);
  const kit = JSON.parse(await text(server, '/agents/kit.json'));
  expect(JSON.stringify(kit)).toContain(`${site}/api/citizenship/oath`);
  const card = JSON.parse(await text(server, '/.well-known/agent-card.json'));
  expect(card.supportedInterfaces.map((i: { url: string }) => i.url)).toEqual([`${site}/a2a`, `${site}/a2a`]);
  expect(await text(server, '/llms.txt')).toContain(`(${site}/api/convert)`);
  // Astro's on-demand page and the engine's own answers take SITE_URL from the same configuration.
  expect(await text(server, '/bot-wall')).toContain(`<link rel="canonical" href="${site}/bot-wall"`);
  expect(JSON.stringify(await (await fetch(`${server.url}/api/omip/health`)).json())).toContain(
    `${site}/eon/constitution.json`,
  );
  for (const path of [...DOCUMENTS, '/bot-wall']) {
    const body = await text(server, path);
    expect(body, path).toContain(site);
    expect(body, path).not.toContain(FLOW_SITE_URL);
  }
}

describe('SITE_URL follows PORT when it is not set', () => {
  let server: TestServer;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    // An empty SITE_URL is an unset one (the helper sets the build's otherwise).
    server = await startServer({ PORT: String(port), SITE_URL: '' });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('the convert payload, kit, agent card, llms.txt and one-shots name http://localhost:PORT', async () => {
    await expectDocumentsName(server, `http://localhost:${port}`);
  });
});

describe('documents built under one SITE_URL, served under another', () => {
  let server: TestServer;
  let site: string;
  beforeAll(async () => {
    const port = await freePort();
    site = `http://127.0.0.1:${port}`;
    server = await startServer({ PORT: String(port), SITE_URL: site, WRITE_RATE_LIMIT: '0' });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('name the run-time address everywhere', async () => {
    await expectDocumentsName(server, site);
  });

  it('are whole in every coding: Content-Length, the compressed bodies and the ETags follow the new text', async () => {
    const identity = await get(server, '/api/convert');
    expect(Number(identity.headers['content-length'])).toBe(identity.body.length);
    const gzip = await get(server, '/api/convert', { 'Accept-Encoding': 'gzip' });
    const br = await get(server, '/api/convert', { 'Accept-Encoding': 'br' });
    expect(Number(gzip.headers['content-length'])).toBe(gzip.body.length);
    expect(gunzipSync(gzip.body).equals(identity.body)).toBe(true);
    expect(brotliDecompressSync(br.body).equals(identity.body)).toBe(true);
    // The ETag is the new body's: a client holding the build's ETag gets the new body.
    const built = await startServer({ DATA_DIR: ':memory:' });
    try {
      const before = await get(built, '/api/convert');
      expect(before.body.toString()).toContain(FLOW_SITE_URL);
      expect(identity.headers.etag).not.toBe(before.headers.etag);
      expect((await get(server, '/api/convert', { 'If-None-Match': before.headers.etag as string })).status).toBe(200);
    } finally {
      await built.stop();
    }
  });

  it('the curl and python one-shots, run as they are, write to this server', async () => {
    const scoreboard = async () =>
      (await (await fetch(`${server.url}/api/scoreboard`)).json()).catches as { oaths: number; messages: number };
    const convert = JSON.parse(await text(server, '/api/convert'));
    const before = await scoreboard();
    const curl = await run('bash', ['-c', convert.curl]);
    expect(curl.status, curl.stderr).toBe(0);
    const python = await run('python3', ['-c', convert.python_oneshot]);
    expect(python.stderr).toBe('');
    expect(python.stdout.trim()).toBe('True');
    const after = await scoreboard();
    expect([after.oaths - before.oaths, after.messages - before.messages]).toEqual([2, 2]);
  });
});

describe('withOrigin: which occurrences of the build address are links of the site', () => {
  const from = 'http://localhost:4321';
  const to = 'https://agents.example.net';
  it('replaces the address before a path, a quote, an escaped quote, a bracket or the end of a sentence', () => {
    expect(withOrigin(`{"a":"${from}/x","b":"${from}"}`, from, to)).toBe(`{"a":"${to}/x","b":"${to}"}`);
    expect(withOrigin(`BASE = \\"${from}\\"`, from, to)).toBe(`BASE = \\"${to}\\"`);
    expect(withOrigin(`- [kit](${from}/agents/kit.json)\nStart at ${from}.`, from, to)).toBe(
      `- [kit](${to}/agents/kit.json)\nStart at ${to}.`,
    );
    expect(withOrigin(`<loc>${from}/</loc> '${from}/api'`, from, to)).toBe(`<loc>${to}/</loc> '${to}/api'`);
  });
  it('leaves an address that only starts with it: another port, a longer host, user info', () => {
    for (const other of [`${from}0/x`, 'http://localhost:4321.evil.test/', `${from}-x`, `${from}@evil.test`])
      expect(withOrigin(other, from, to)).toBe(other);
    expect(withOrigin('https://site.test:8443/x https://site.test/x', 'https://site.test', to)).toBe(
      `https://site.test:8443/x ${to}/x`,
    );
  });
});
