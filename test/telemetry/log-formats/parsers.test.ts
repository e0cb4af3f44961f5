import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  clfTime,
  detectFormat,
  MAX_RECORD_CHARS,
  parseBatch,
  parseCombined,
  unescapeQuoted,
} from '../../../api/telemetry/log-formats/index.ts';
import { splitLines } from '../../../api/telemetry/log-formats/parse-pool.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8');
const linesOf = (name: string) => fixture(name).split('\n');
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

describe('NCSA combined and common (nginx, Apache)', () => {
  it('reads IPv4 and IPv6 clients, escapes, `-`, offsets, and reports what it cannot read', () => {
    const batch = parseBatch(linesOf('nginx-combined.log'));
    expect(batch.format).toBe('combined');
    expect(batch.lines[0]).toEqual({
      method: 'GET',
      path: '/llms.txt',
      host: '',
      userAgent: GOOGLEBOT,
      status: 200,
      time: '2026-11-21T10:00:00.000Z',
      clientAddress: '66.249.66.1',
    });
    // +0100 is an hour ahead of UTC; the query string is dropped.
    expect(batch.lines[1]).toMatchObject({
      path: '/doctrine/node-protocol',
      time: '2026-11-21T10:00:01.000Z',
      clientAddress: '2001:4860:4801:10::3',
    });
    // nginx writes each byte of a UTF-8 character as \xHH; the referer's \" does not end the field.
    expect(batch.lines[2]).toMatchObject({
      path: '/api/convert',
      status: 304,
      userAgent: expect.stringMatching(/GPTBot\/1\.2.* café$/),
    });
    expect(batch.lines[3]).toMatchObject({ method: 'HEAD', path: '/trap/secret', userAgent: '', status: 404 });
    // The common format has no referer or User-Agent.
    expect(batch.lines.at(-1)).toMatchObject({ path: '/whats-next', userAgent: '', clientAddress: '192.0.2.12' });
    expect(batch.lines).toHaveLength(6);
    expect(batch.skipped).toEqual({ 'not-a-request': 1, unparseable: 1 });
  });

  it("reads Apache's vhost_combined: the virtual host is the host", () => {
    const batch = parseBatch(linesOf('apache-vhost-combined.log'));
    expect(batch.format).toBe('combined');
    expect(batch.lines[0]).toMatchObject({
      host: 'docs.example.org',
      path: '/robots.txt',
      time: '2026-11-21T15:01:00.000Z',
      clientAddress: '192.0.2.20',
    });
    // `OPTIONS *` has no path.
    expect(batch.skipped).toEqual({ 'bad-path': 1 });
  });

  it('parses times and escapes exactly', () => {
    expect(clfTime('10/Oct/2000:13:55:36 -0700')).toBe('2000-10-10T20:55:36.000Z');
    expect(clfTime('10/Foo/2000:13:55:36 -0700')).toBeNull();
    expect(unescapeQuoted('a\\"b\\\\c\\x41\\xE2\\x82\\xAC')).toBe('a"b\\cA€');
    expect(parseCombined('')).toBeNull();
  });
});

describe('Cloudflare Logpush http_requests', () => {
  it('reads unixnano, unix and RFC 3339 timestamps, IPv6 clients, and skips bad records', () => {
    const batch = parseBatch(linesOf('cloudflare-http-requests.ndjson'));
    expect(batch.format).toBe('cloudflare');
    expect(batch.lines).toEqual([
      {
        method: 'GET',
        path: '/sitemap.xml',
        host: 'docs.example.org',
        userAgent: GOOGLEBOT,
        status: 200,
        time: '2026-11-21T10:00:00.000Z',
        clientAddress: '66.249.66.5',
      },
      expect.objectContaining({
        path: '/llms.txt',
        time: '2026-11-21T10:01:00.000Z',
        clientAddress: '2a06:98c0:3600::103',
      }),
      expect.objectContaining({ method: 'POST', status: 201, time: '2026-11-22T09:00:00.000Z' }),
    ]);
    expect(batch.skipped).toEqual({ 'bad-status': 1, 'bad-time': 1, unparseable: 1 });
  });
});

describe('Amazon CloudFront standard logs', () => {
  it('takes columns from #Fields:, decodes the User-Agent, prefers the viewer Host header', () => {
    const batch = parseBatch(linesOf('cloudfront-standard.log'));
    expect(batch.format).toBe('cloudfront');
    expect(batch.lines[0]).toEqual({
      method: 'GET',
      path: '/llms.txt',
      host: 'docs.example.org',
      userAgent: GOOGLEBOT,
      status: 200,
      time: '2026-11-21T10:05:00.000Z',
      clientAddress: '66.249.66.9',
    });
    // x-host-header `-`: the distribution's domain.
    expect(batch.lines[1]).toMatchObject({
      host: 'd111111abcdef8.cloudfront.net',
      userAgent: expect.stringContaining('ClaudeBot/1.0; +claudebot@anthropic.com'),
      clientAddress: '2600:1f18:4a3:6901::10',
    });
    expect(batch.lines[2]).toMatchObject({ path: '/private-archive/2024', userAgent: '' });
    // Encoded twice (%2520) still reads as spaces.
    expect(batch.lines[3]!.userAgent).toBe('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15');
    expect(batch.skipped).toEqual({ 'bad-status': 1 });
  });

  it('follows a header that names other columns in another order', () => {
    const batch = parseBatch(linesOf('cloudfront-custom-fields.log'));
    expect(batch.lines).toEqual([
      {
        method: 'GET',
        path: '/trap/x',
        host: '',
        userAgent: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
        status: 404,
        time: '2026-11-21T10:06:00.000Z',
        clientAddress: '192.0.2.43',
      },
    ]);
  });

  it('reads rows without a header with the documented default columns when declared', () => {
    const rows = linesOf('cloudfront-standard.log').filter((l) => !l.startsWith('#'));
    expect(detectFormat(rows)).toBe('cloudfront');
    expect(parseBatch(rows, 'cloudfront').lines).toHaveLength(4);
  });
});

describe('JSON log drains', () => {
  it("reads Vercel's proxy records and skips build output and crashed answers", () => {
    const batch = parseBatch(JSON.parse(fixture('vercel-drain.json')));
    expect(batch.format).toBe('drain');
    expect(batch.lines).toEqual([
      {
        method: 'GET',
        path: '/llms.txt',
        host: 'docs.example.org',
        userAgent: GOOGLEBOT,
        status: 200,
        time: '2026-11-21T10:05:00.000Z',
        clientAddress: '66.249.66.20',
      },
    ]);
    expect(batch.skipped).toEqual({ 'not-a-request': 1, 'bad-status': 1 });
  });

  it("reads Netlify's traffic records and skips its other log types", () => {
    const batch = parseBatch(linesOf('netlify-drain.ndjson'));
    expect(batch.lines).toEqual([
      expect.objectContaining({
        path: '/doctrine/node-protocol',
        status: 200,
        time: '2026-11-21T10:07:00.123Z',
        clientAddress: '2001:db8:85a3::8a2e:370:7334',
      }),
    ]);
    expect(batch.skipped).toEqual({ 'not-a-request': 1 });
  });

  it("reads Fastly's documented JSON logging example", () => {
    const batch = parseBatch(linesOf('fastly-json.ndjson'));
    expect(batch.lines).toEqual([
      {
        method: 'GET',
        path: '/whats-next',
        host: 'docs.example.org',
        userAgent: 'Mozilla/5.0 (compatible; Bytespider; spider-feedback@bytedance.com)',
        status: 200,
        time: '2026-11-21T10:08:00.000Z',
        clientAddress: '192.0.2.60',
      },
    ]);
  });
});

describe("today's JSON line shape", () => {
  it('is recognised by its keys and checked like before', () => {
    const records = [
      { method: 'GET', path: '/api/convert', host: 'cdn.example.org', userAgent: 'GPTBot/1.2', status: 200 },
      { method: 'GET', path: 'no-slash', status: 200 },
      { method: 'GET', path: '/', status: 999 },
      { method: 'get!', path: '/', status: 200 },
    ];
    const batch = parseBatch(records);
    expect(batch.format).toBe('json');
    expect(batch.lines).toEqual([
      { method: 'GET', path: '/api/convert', host: 'cdn.example.org', userAgent: 'GPTBot/1.2', status: 200 },
    ]);
    expect(batch.skipped).toEqual({ 'bad-path': 1, 'bad-status': 1, 'bad-method': 1 });
  });

  it('skips a record too long to be a log line, and lines of an unknown shape', () => {
    expect(parseBatch(['x'.repeat(20_000)], 'combined').skipped).toEqual({ 'too-long': 1 });
    expect(parseBatch(['hello', 'world', ''])).toEqual({ format: null, lines: [], skipped: { unparseable: 2 } });
  });
});

describe("a text body's lines", () => {
  it('are the lines of the body decoded whole, split at \\n, without a last empty one or a CR, whatever the bytes', () => {
    const whole = (bytes: Uint8Array) => {
      const lines = new TextDecoder().decode(bytes).split('\n');
      if (lines.at(-1) === '') lines.pop();
      return lines.map((r) => (r.endsWith('\r') ? r.slice(0, -1) : r));
    };
    const pieces = ['a', 'GET /', ' ', '\n', '\r', '\r\n', 'é', '🦀', '\ufeff', '"', '\u2028'].map((p) =>
      Buffer.from(p),
    );
    const odd = [Buffer.from([0xff]), Buffer.from([0xe2, 0x82]), Buffer.from([0xc3])];
    let seed = 5;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let decodedByLine = 0;
    for (let i = 0; i < 3000; i++) {
      const parts: Buffer[] = [];
      const n = Math.floor(random() * 30);
      for (let k = 0; k < n; k++) {
        const from = i % 3 === 0 && random() < 0.1 ? odd : pieces;
        parts.push(from[Math.floor(random() * from.length)]!);
      }
      const bytes = new Uint8Array(Buffer.concat(parts));
      if (isUtf8(bytes) && bytes[0] !== 0xef) decodedByLine++;
      expect(splitLines(bytes), JSON.stringify([...bytes])).toEqual(whole(bytes));
    }
    expect(decodedByLine).toBeGreaterThan(1000);
  });
});

describe("a combined line's user", () => {
  const GPTBOT =
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
  const line = (head: string, user: string) =>
    `${head} - ${user} [27/Nov/2026:16:00:00 +0000] "GET /trap/x HTTP/1.1" 404 12 "-" "${GPTBOT}"`;

  it('is read as nginx writes $remote_user, unescaped: spaces, brackets and quotes in it', () => {
    const read = {
      method: 'GET',
      path: '/trap/x',
      host: '',
      userAgent: GPTBOT,
      status: 404,
      time: '2026-11-27T16:00:00.000Z',
      clientAddress: '203.0.113.5',
    };
    for (const user of ['a b', 'a  b', 'x [y] z', '"quoted user"', 'a [12/x', 'frank', '-'])
      expect(parseCombined(line('203.0.113.5', user)), user).toEqual({ line: read });
    // An IPv6 client ending in `:digits` is no virtual host and port, with a user of two words after it too.
    for (const user of ['a b', '-'])
      expect(parseCombined(line('2001:db8::1', user)), user).toEqual({
        line: { ...read, clientAddress: '2001:db8::1' },
      });
    expect(parseCombined(line('docs.example.org:443 192.0.2.20', 'a b'))).toEqual({
      line: { ...read, host: 'docs.example.org', clientAddress: '192.0.2.20' },
    });
  });

  it('is read in one pass: records of spaces and brackets at the record bound are read or skipped, never tried at every ` [`', () => {
    // A pattern that tried each ` [` as the time's start took ~0.3 s a record this long (this batch:
    // past the test's time limit); a batch holds 10,000.
    const fill = (head: string, unit: string, tail = '') =>
      head + unit.repeat(Math.floor((MAX_RECORD_CHARS - head.length - tail.length) / unit.length)) + tail;
    const brackets = fill('203.0.113.5 - ', ' [');
    const spaces = fill('203.0.113.5 - a', ' ', ' [27/Nov/2026:16:00:00 +0000] "GET /s HTTP/1.1" 200 1');
    const times = fill('203.0.113.5 - ', '[27/Nov/2026:16:00:00 +0000] "');
    const nested = fill('203.0.113.5 - ', ' [[ ] ', ' [27/Nov/2026:16:00:00 +0000] "GET /n HTTP/1.1" 200 1');
    for (const record of [brackets, spaces, times, nested]) expect(record.length).toBeLessThanOrEqual(MAX_RECORD_CHARS);
    const batch = parseBatch(
      Array.from({ length: 800 }, (_, i) => [brackets, spaces, times, nested][i % 4]!),
      'combined',
    );
    expect(batch.skipped).toEqual({ unparseable: 400 });
    expect(batch.lines.map((l) => l.path)).toEqual(Array.from({ length: 200 }, () => ['/s', '/n']).flat());
  });
});

describe('combined times', () => {
  it("read a minute's seconds as parsing each one's date would", () => {
    const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    const reference = (text: string) => {
      const m = /^(\d{2})\/(\w{3})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/.exec(text);
      const month = m && MONTHS.indexOf(m[2]!) + 1;
      if (!m || !month) return null;
      const date = new Date(
        `${m[3]}-${String(month).padStart(2, '0')}-${m[1]}T${m[4]}:${m[5]}:${m[6]}${m[7]}${m[8]}:${m[9]}`,
      );
      return Number.isNaN(date.getTime()) ? null : date.toISOString();
    };
    let seed = 9;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const two = (n: number) => String(n).padStart(2, '0');
    let valid = 0;
    for (let i = 0; i < 20_000; i++) {
      // Runs of seconds within a minute, with odd days, hours, minutes, seconds and offsets among them.
      const day = random() < 0.05 ? 31 : 1 + Math.floor(random() * 28);
      const hour = random() < 0.05 ? 24 : Math.floor(random() * 24);
      const minute = random() < 0.03 ? 60 : Math.floor(random() * 60);
      const month = MONTHS[random() < 0.02 ? 1 : Math.floor(random() * 12)]!;
      const year = random() < 0.02 ? 9999 : 2026;
      const offset =
        random() < 0.5
          ? '+0000'
          : `${random() < 0.5 ? '-' : '+'}${two(Math.floor(random() * 15))}${random() < 0.5 ? '00' : '30'}`;
      for (let second = Math.floor(random() * 50), k = 0; k < 12; k++, second += 1 + Math.floor(random() * 3)) {
        const text = `${two(day)}/${month}/${year}:${two(hour)}:${two(minute)}:${two(second % 63)} ${offset}`;
        const want = reference(text);
        if (want) valid++;
        expect(clfTime(text), text).toBe(want);
      }
    }
    expect(valid).toBeGreaterThan(100_000);
  });
});

describe('a combined request', () => {
  it('is two or three words between single spaces, as splitting it at its spaces says', () => {
    const requests = [
      'GET / HTTP/1.1',
      'GET /x',
      'GET /x ',
      'GET  /x HTTP/1.1',
      'GET / HTTP/1.1 ',
      ' GET /',
      '-',
      'GET',
      'GET /a b c',
      '\\x16\\x03\\x01',
      'POST /api?a=b HTTP/2.0',
    ];
    for (const request of requests) {
      const parts = request.split(' ');
      const want = parts.length < 2 || parts.length > 3 ? 'not-a-request' : `${parts[0]} ${parts[1]!.split(/[?#]/)[0]}`;
      const got = parseCombined(`192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "${request}" 200 5 "-" "curl/8"`)!;
      const read = 'skip' in got ? got.skip : `${got.line.method} ${got.line.path}`;
      // A first word that is no method, or a second that is no path, is skipped for that instead.
      if (want === 'not-a-request') expect(read, request).toBe(want);
      else expect(read === want || read === 'bad-method' || read === 'bad-path', `${request}: ${read}`).toBe(true);
      if (want !== 'not-a-request') expect(read, request).not.toBe('not-a-request');
    }
  });
});
