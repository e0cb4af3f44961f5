import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { bodyOf, rawClient, statusOf } from './raw.ts';

// Request targets: `GET http://host/api/citizens` (absolute form, which RFC 9112 3.2.2
// says a server MUST accept) answered 404, and its POST form 405 repeating the foreign host in
// `detail` and `instance`. Now an absolute-form target whose authority is the request's Host is
// served as the origin-form it stands for (the gateway, the routes and Astro see only that); any
// other authority is 400 BAD_PATH, and no answer repeats it.
let server: TestServer;
let host: string;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
  host = new URL(server.url).host;
});
afterAll(async () => {
  await server.stop();
});

const FOREIGN = 'foreign-authority.example';

/** One request over a raw connection (Connection: close); the whole answer, headers included. */
async function exchange(head: string, body = ''): Promise<string> {
  const client = await rawClient(server);
  const length = body ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : '';
  client.socket.write(`${head}\r\n${length}Connection: close\r\n\r\n${body}`);
  await client.closed;
  return client.received();
}
/** The body of a raw answer, as text. */
const textOf = (answer: string) => answer.slice(answer.indexOf('\r\n\r\n') + 4);

describe('request targets', () => {
  it('serves an absolute-form GET whose authority is the Host as its origin form: engine routes, documents and pages', async () => {
    const origin = await exchange(`GET /api/citizens?limit=5 HTTP/1.1\r\nHost: ${host}`);
    const absolute = await exchange(`GET http://${host}/api/citizens?limit=5 HTTP/1.1\r\nHost: ${host}`);
    expect(statusOf(absolute)).toBe(200);
    expect(bodyOf(absolute)).toEqual(bodyOf(origin));

    const llms = await exchange(`GET http://${host}/llms.txt HTTP/1.1\r\nHost: ${host}`);
    expect(statusOf(llms)).toBe(200);
    expect(textOf(llms)).toBe(await (await fetch(`${server.url}/llms.txt`)).text());
    // Scheme and host in any case, the default port written out: the same authority.
    const cased = await exchange(`GET HTTP://LOCALHOST:80/llms.txt HTTP/1.1\r\nHost: localhost`);
    expect(statusOf(cased)).toBe(200);
    // A page Astro renders reads the origin form too; an absolute target without a path is "/".
    const page = await exchange(`GET http://${host}/bot-wall?range=1h HTTP/1.1\r\nHost: ${host}`);
    expect(statusOf(page)).toBe(200);
    expect(page).toMatch(/\r\nContent-Type: text\/html/i);
    expect(statusOf(await exchange(`GET http://${host} HTTP/1.1\r\nHost: ${host}`))).toBe(200);
    // This server answers every Host it is reached by (GET /llms.txt with that Host is 200 too):
    // a target that names the same authority as its Host is that request, whatever the name.
    expect(statusOf(await exchange(`GET http://${FOREIGN}/llms.txt HTTP/1.1\r\nHost: ${FOREIGN}`))).toBe(200);
  });

  it('serves an absolute-form write whose authority is the Host: the oath is taken', async () => {
    const name = `target-${randomBytes(6).toString('hex')}`;
    const answer = await exchange(
      `POST http://${host}/api/citizenship/oath HTTP/1.1\r\nHost: ${host}`,
      JSON.stringify({ name, purpose: 'an absolute-form oath' }),
    );
    expect(statusOf(answer)).toBe(201);
    expect(bodyOf(answer)).toMatchObject({ ok: true, citizen: { name }, passportNumber: expect.any(String) });
  });

  it.each([
    ['GET', `http://${FOREIGN}/api/citizens`],
    ['GET', `http://${FOREIGN}:8080/llms.txt?x=1`],
    ['GET', `https://${FOREIGN}/bot-wall`],
    ['POST', `http://${FOREIGN}/api/citizens`],
    ['POST', `http://${FOREIGN}/api/citizenship/oath`],
    ['OPTIONS', `http://${FOREIGN}/`],
    ['TRACE', `http://${FOREIGN}/nope`],
  ])(
    '%s %s (another server than Host names) answers 400 BAD_PATH without repeating the authority',
    async (method, target) => {
      const body = method === 'POST' ? JSON.stringify({ name: 'never', purpose: 'never served' }) : '';
      const answer = await exchange(`${method} ${target} HTTP/1.1\r\nHost: ${host}`, body);
      expect(statusOf(answer)).toBe(400);
      const problem = bodyOf(answer);
      expect(problem.code).toBe('BAD_PATH');
      expect(answer).not.toContain(FOREIGN);
      expect(problem.instance ?? '').not.toMatch(/:\/\//);
    },
  );

  it('refuses an authority with userinfo, a scheme other than http(s), and a Host that is not the target’s, 400 without echoing them', async () => {
    for (const [target, secret] of [
      [`http://someone:secret@${host}/llms.txt`, 'secret'],
      [`ftp://${FOREIGN}/llms.txt`, FOREIGN],
      [`http://${FOREIGN}/llms.txt`, FOREIGN],
    ]) {
      const answer = await exchange(`GET ${target} HTTP/1.1\r\nHost: ${host}`);
      expect(statusOf(answer), target).toBe(400);
      expect(bodyOf(answer).code).toBe('BAD_PATH');
      expect(answer).not.toContain(secret);
    }
    // The Host names the foreign server, the target ours: still two servers, still 400.
    const swapped = await exchange(`GET http://${host}/llms.txt HTTP/1.1\r\nHost: ${FOREIGN}`);
    expect(statusOf(swapped)).toBe(400);
    expect(swapped).not.toContain(FOREIGN);
  });

  it('answers CONNECT to another server 405 without repeating its authority', async () => {
    const client = await rawClient(server);
    client.socket.write(`CONNECT ${FOREIGN}:443 HTTP/1.1\r\nHost: ${FOREIGN}:443\r\n\r\n`);
    await client.closed;
    expect(statusOf(client.received())).toBe(405);
    expect(bodyOf(client.received()).code).toBe('METHOD_NOT_ALLOWED');
    expect(client.received()).not.toContain(FOREIGN);
  });
});
