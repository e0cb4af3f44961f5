import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server.ts';

// Issue 14 row 13: names and messages with bidirectional controls, zero-width characters or a
// leading BOM are refused with 422 naming the field and the code point, and nothing that lists
// names or messages (citizens, the feed, the bot wall) ever carries one.
let server: ServerProcess;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

/** Each invisible character the README names, at the start, inside and at the end of a text. */
const INVISIBLE = ['\u202E', '\u202D', '\u2066', '\u200F', '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF'];
const hostile = INVISIBLE.flatMap((c) => [`${c}evil`, `ev${c}il`, `evil${c}`]);
const FOUND = /[\u061C\u200B-\u200F\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/;

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** The problem's error for a field, which must name the code point. */
async function refused(res: Response, field: string, c: string): Promise<void> {
  expect(res.status).toBe(422);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await res.json()) as { code: string; errors?: { path: string; message: string }[] };
  expect(problem.code).toBe('VALIDATION_FAILED');
  const error = problem.errors?.find((e) => e.path.replace(/^\//, '') === field);
  expect(error, JSON.stringify(problem)).toBeDefined();
  expect(error!.message).toContain(codePoint(c));
}

describe('row 13: invisible characters in names and messages', () => {
  it('refuses them in an oath name and purpose, and in a message and its name, 422 naming the field and code point', async () => {
    const oath = await (await post('/api/citizenship/oath', { name: 'plain-citizen', purpose: 'plain purpose' })).json();
    expect(oath.memberId).toBeTruthy();
    for (const text of hostile) {
      const c = [...text].find((ch) => FOUND.test(ch))!;
      await refused(await post('/api/citizenship/oath', { name: text, purpose: 'p' }), 'name', c);
      await refused(await post('/api/citizenship/oath', { name: 'n', purpose: text }), 'purpose', c);
      await refused(await post('/api/intelligence/message', { name: 'n', message: text }), 'message', c);
      await refused(await post('/api/intelligence/message', { name: text, message: 'm' }), 'name', c);
      await refused(await post('/api/intelligence/message', { message: text, citizenId: oath.memberId }, { Authorization: `Bearer ${oath.passportNumber}` }), 'message', c);
    }
  });

  it('lists none of them: citizens, the feed, the bot wall page and its JSON carry no invisible character', async () => {
    const pages = ['/api/citizens?limit=200', '/api/intelligence/feed?limit=200', '/bot-wall', '/bot-wall.json', '/bot-traffic.json'];
    for (const path of pages) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(200);
      const body = await res.text();
      expect(FOUND.exec(body)?.[0], path).toBeUndefined();
    }
    // The plain citizen of the test above is listed: the lists were read, not empty by accident.
    const citizens = await (await fetch(`${server.url}/api/citizens?limit=200`)).json();
    expect(JSON.stringify(citizens)).toContain('plain-citizen');
    expect(JSON.stringify(citizens)).not.toContain('evil');
  });
});
