import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClientResolver, PROXY_HEADER_MAX_CHARS } from '../../api/http/client.ts';
import { ACCEPT_ENCODING_MAX_CHARS, chooseEncoding } from '../../api/http/encoding.ts';
import { IF_NONE_MATCH_MAX_CHARS, noneMatch } from '../../api/gateway/static-site.ts';
import { createRobotsJudge, ROBOTS_LIMITS } from '../../api/telemetry/robots/robots.ts';
import { parseSignatureAgent, SIGNATURE_HEADER_MAX_CHARS } from '../../api/telemetry/web-bot-auth/signature-agent.ts';
import { webBotAuthSignatures } from '../../api/telemetry/web-bot-auth/web-bot-auth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// Every request header the gateway parses has a size bound that keeps its cost near an ordinary
// request's (14 KB percent-encoded paths cost ~1 ms in the robots judgement, a 15 KB Signature-Agent
// 0.6 ms, 11 KB Accept-Encoding 390 µs, 12 KB If-None-Match 255 µs). Past its bound a header is
// not read: judged as no match. Each test sends one just under and one just past the bound.

/** What `build` makes of a filler of the length that makes it exactly `length` characters long. */
const sized = (length: number, build: (fill: string) => string) => {
  const text = build('a'.repeat(length - build('').length));
  expect(text).toHaveLength(length);
  return text;
};

describe('the path judged against robots.txt', () => {
  const judge = createRobotsJudge('User-agent: *\nDisallow: /private/\n');
  const path = (length: number) => `/private/${'%61'.repeat(length)}`.slice(0, length);

  it(`judges a path of ${ROBOTS_LIMITS.pathChars} characters, and leaves a longer one unjudged (null, as a host without robots.txt)`, () => {
    expect(judge.judge(null, path(ROBOTS_LIMITS.pathChars), ['GPTBot'])?.broke?.text).toBe('Disallow: /private/');
    expect(judge.judge(null, path(ROBOTS_LIMITS.pathChars + 1), ['GPTBot'])).toBeNull();
    expect(judge.judge(null, path(14 * 1024), ['GPTBot'])).toBeNull();
  });
});

describe('Signature-Agent and Signature-Input', () => {
  // A member the reader skips (not a URL, not an inner list), then the real one.
  const agent = (length: number) =>
    sized(
      length,
      (fill) => `pad="${fill}", sig1="https://agent.example/.well-known/http-message-signatures-directory"`,
    );
  const input = (length: number) =>
    sized(
      length,
      (fill) =>
        `pad="${fill}", sig1=("@authority" "signature-agent";key="sig1");created=1;keyid="k";tag="web-bot-auth"`,
    );

  it(`reads a Signature-Agent of ${SIGNATURE_HEADER_MAX_CHARS} characters, and not a longer one`, () => {
    expect(parseSignatureAgent(agent(SIGNATURE_HEADER_MAX_CHARS))?.members[0]?.origin).toBe('https://agent.example');
    expect(parseSignatureAgent(agent(SIGNATURE_HEADER_MAX_CHARS + 1))).toBeNull();
    expect(parseSignatureAgent(agent(15 * 1024))).toBeNull();
  });

  it(`reads a Signature-Input of ${SIGNATURE_HEADER_MAX_CHARS} characters, and not a longer one (no signature: invalid)`, () => {
    const agents = parseSignatureAgent(agent(200));
    expect(webBotAuthSignatures(input(SIGNATURE_HEADER_MAX_CHARS), agents)?.[0]?.label).toBe('sig1');
    expect(webBotAuthSignatures(input(SIGNATURE_HEADER_MAX_CHARS + 1), agents)).toBeNull();
  });
});

describe('X-Forwarded-For and Forwarded behind a trusted proxy', () => {
  it(`reads the hops within the last ${PROXY_HEADER_MAX_CHARS} characters: the nearest client still, never the far end of a long header`, () => {
    const resolve = createClientResolver(['loopback', '10.0.0.0/8']);
    const short = { 'x-forwarded-for': `198.51.100.7, ${'10.0.0.1, '.repeat(20)}10.0.0.2` };
    expect(resolve('127.0.0.1', short)).toBe('198.51.100.7');
    // Past the bound the walk ends at the oldest whole hop it read, a trusted one: not the client named 14 KB back.
    const long = { 'x-forwarded-for': `198.51.100.7, ${'10.0.0.1, '.repeat(1400)}10.0.0.2` };
    expect(resolve('127.0.0.1', long)).toBe('10.0.0.1');
    // An untrusted client nearest: found whatever came before it.
    const spoofed = { 'x-forwarded-for': `${'1.2.3.4, '.repeat(1600)}203.0.113.9` };
    expect(resolve('127.0.0.1', spoofed)).toBe('203.0.113.9');

    const forwarded = createClientResolver(['loopback', '10.0.0.0/8'], 'forwarded');
    expect(forwarded('127.0.0.1', { forwarded: `for=198.51.100.7, ${'for=10.0.0.1, '.repeat(20)}for=10.0.0.2` })).toBe(
      '198.51.100.7',
    );
    expect(
      forwarded('127.0.0.1', { forwarded: `for=198.51.100.7, ${'for=10.0.0.1, '.repeat(1000)}for=10.0.0.2` }),
    ).toBe('10.0.0.1');
  });
});

describe('Accept-Encoding and If-None-Match, through the server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ DATA_DIR: ':memory:' });
  });
  afterAll(async () => {
    await server.stop();
  });

  function get(path: string, headers: Record<string, string>) {
    return new Promise<{ status: number; headers: Record<string, string | string[] | undefined> }>(
      (resolve, reject) => {
        const req = request(server.url + path, { headers }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      },
    );
  }

  it(`compresses for an Accept-Encoding of ${ACCEPT_ENCODING_MAX_CHARS} characters, and answers a longer one uncompressed`, async () => {
    const header = (length: number) => sized(length, (fill) => `x-${fill};q=0, br`);
    const within = header(ACCEPT_ENCODING_MAX_CHARS);
    const past = header(ACCEPT_ENCODING_MAX_CHARS + 1);
    expect(chooseEncoding(within)).toBe('br');
    expect(chooseEncoding(past)).toBeNull();
    expect((await get('/api/convert', { 'Accept-Encoding': within })).headers['content-encoding']).toBe('br');
    const long = await get('/api/convert', { 'Accept-Encoding': header(11 * 1024) });
    expect(long.status).toBe(200);
    expect(long.headers['content-encoding']).toBeUndefined();
  });

  it(`answers 304 to an If-None-Match of ${IF_NONE_MATCH_MAX_CHARS} characters naming the tag, and 200 to a longer one`, async () => {
    const first = await get('/llms.txt', {});
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"/);
    const header = (length: number) => sized(length, (fill) => `"${fill}", W/"x", ${etag}`);
    const within = header(IF_NONE_MATCH_MAX_CHARS);
    expect(noneMatch(within, etag)).toBe(true);
    expect(noneMatch(header(IF_NONE_MATCH_MAX_CHARS + 1), etag)).toBe(false);
    expect((await get('/llms.txt', { 'If-None-Match': within })).status).toBe(304);
    expect((await get('/llms.txt', { 'If-None-Match': header(12 * 1024) })).status).toBe(200);
  });
});
