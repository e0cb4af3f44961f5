import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { rawClient } from './raw.ts';

// Pipelining: a valid oath followed in the same TCP packet by a malformed request got
// only a 400 back, yet the citizen was created: its one-time passport was lost. node's parser
// reported the second request ('clientError') and its default handler wrote 400 and destroyed the
// socket while the oath's answer was still on its way. Now the 400 waits for the answers of the
// requests before it on that connection (api/gateway/client-error.ts), then closes.
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answers in a raw stream of HTTP/1.1 responses, in order (bodies by Content-Length). */
function answersOf(raw: string): Answer[] {
  const out: Answer[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) break;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    const bodyBytes = Buffer.from(rest.slice(end + 4), 'latin1').subarray(0, length);
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: bodyBytes.toString('utf8') });
    rest = rest.slice(end + 4 + bodyBytes.toString('latin1').length);
  }
  return out;
}

const oath = (name: string) => {
  const body = JSON.stringify({ name, purpose: 'pipelined before a malformed request' });
  return `POST /api/citizenship/oath HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};
const uniqueName = () => `pipelined-${randomBytes(6).toString('hex')}`;

/** Sends `packet` in one write; resolves with the answers once the server closed the connection. */
async function send(packet: string): Promise<Answer[]> {
  const client = await rawClient(server);
  client.socket.write(packet);
  await client.closed;
  return answersOf(client.received());
}

/** Each malformed request node's parser refuses, and the answer node's own handler gives it. */
const MALFORMED: [string, string, number][] = [
  ['a header line without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nthis is no header\r\n\r\n', 400],
  ['no HTTP at all', 'NOT HTTP AT ALL\r\n\r\n', 400],
  ['headers past 16 KiB', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  // Its headers are read, so node hands it over; its body cannot be: the refusal is about it.
  [
    'a write whose chunked body cannot be read',
    'POST /api/citizenship/oath HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n',
    400,
  ],
];

describe('a write pipelined before a malformed request', () => {
  it.each(MALFORMED)(
    'an oath then %s in one packet: the oath’s 201 with its passport arrives, then the refusal, then the connection closes',
    async (_, malformed, status) => {
      const name = uniqueName();
      const answers = await send(oath(name) + malformed);
      expect(answers.map((a) => a.status)).toEqual([201, status]);
      const taken = JSON.parse(answers[0]!.body) as {
        memberId: string;
        passportNumber: string;
        citizen: { name: string };
      };
      expect(taken.citizen.name).toBe(name);
      expect(taken.passportNumber).toEqual(expect.any(String));
      expect(answers[1]!.headers.connection).toBe('close');

      // The passport that arrived is the citizen's: a verified message goes out with it.
      const message = await fetch(`${server.url}/api/intelligence/message`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${taken.passportNumber}` },
        body: JSON.stringify({ citizenId: taken.memberId, message: 'my passport reached me' }),
      });
      expect(message.status).toBe(201);
    },
  );

  it('two oaths then garbage in one packet: both 201s with their passports, in order, then the 400', async () => {
    const [first, second] = [uniqueName(), uniqueName()];
    const answers = await send(oath(first) + oath(second) + 'GARBAGE \u0001\u0002\r\n\r\n');
    expect(answers.map((a) => a.status)).toEqual([201, 201, 400]);
    expect(answers.slice(0, 2).map((a) => (JSON.parse(a.body) as { citizen: { name: string } }).citizen.name)).toEqual([
      first,
      second,
    ]);
    for (const a of answers.slice(0, 2)) expect(JSON.parse(a.body).passportNumber).toEqual(expect.any(String));
  });

  it('a malformed request with nothing before it is refused at once, as node does', async () => {
    for (const [, malformed, status] of MALFORMED) {
      const answers = await send(malformed);
      expect(answers.map((a) => a.status)).toEqual([status]);
    }
  });

  it('an oath that says Connection: close, then garbage: its answer, and the connection closes without a refusal', async () => {
    const answers = await send(
      oath(uniqueName()).replace('Host: x\r\n', 'Host: x\r\nConnection: close\r\n') + 'GARBAGE\r\n\r\n',
    );
    expect(answers.map((a) => a.status)).toEqual([201]);
    expect(JSON.parse(answers[0]!.body).passportNumber).toEqual(expect.any(String));
  });

  it('logs no error for any of it', () => {
    expect(server.logs.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
  });
});
