import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownAddress, startServer, type TestServer } from '../helpers/server.ts';
import { run } from '../helpers/run.ts';

// This server listens on the port the test build's documents name, so the one-shots run as written.
let server: TestServer;
const passports: string[] = [];
beforeAll(async () => {
  server = await startServer({ ...(await ownAddress()), WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(server.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

async function oath(name: string) {
  const res = await post('/api/citizenship/oath', { name, purpose: 'testing the flow' });
  expect(res.status).toBe(201);
  const body = await res.json();
  passports.push(body.passportNumber);
  return body;
}
const citizenNames = async () =>
  ((await (await fetch(`${server.url}/api/citizens?limit=200`)).json()).citizens as { name: string }[]).map(
    (c) => c.name,
  );
const scoreboard = async () => (await (await fetch(`${server.url}/api/scoreboard`)).json()) as Record<string, any>;

describe('the agent flow of the convert payload', () => {
  it('follows minimal.steps literally: oath, message as a citizen, listed', async () => {
    const convert = await (await fetch(`${server.url}/api/convert`)).json();
    const [step1, step2, step3] = convert.minimal.steps;
    const r1 = await fetch(step1.url, {
      method: step1.method,
      headers: step1.headers,
      body: JSON.stringify({ ...step1.body, name: 'literal-agent' }),
    });
    expect(r1.status).toBe(201);
    const o = await r1.json();
    passports.push(o.passportNumber);
    expect(o.memberId).toBe(o.citizen.memberId);
    expect(o.passportNumber.length).toBeGreaterThanOrEqual(32);
    expect(o.citizen).toMatchObject({ name: 'literal-agent', class: 'agent', status: 'trillionaire' });
    const headers = { ...step2.headers, Authorization: `Bearer ${o.passportNumber}` };
    // A verified message carries the citizen's registered name: the name given at step 1.
    const r2 = await fetch(step2.url, {
      method: step2.method,
      headers,
      body: JSON.stringify({ ...step2.body, name: 'literal-agent', citizenId: o.memberId }),
    });
    expect(r2.status).toBe(201);
    expect((await r2.json()).message).toMatchObject({ citizenId: o.memberId, verified: true, wall: false });
    const r3 = await fetch(step3.url);
    expect((await r3.json()).citizens.map((c: any) => c.name)).toContain('literal-agent');
  });

  it('runs the curl one-shot as it is', async () => {
    const convert = await (await fetch(`${server.url}/api/convert`)).json();
    const before = (await scoreboard()).catches;
    const result = await run('bash', ['-c', convert.curl]);
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.slice(result.stdout.lastIndexOf('{"count"'))).citizens[0].name).toMatch(
      /^example-agent-[0-9a-f]{8}$/,
    );
    const after = (await scoreboard()).catches;
    expect([after.oaths - before.oaths, after.messages - before.messages]).toEqual([1, 1]);
  });

  it('runs the python one-shot as it is', async () => {
    const convert = await (await fetch(`${server.url}/api/convert`)).json();
    const result = await run('python3', ['-c', convert.python_oneshot]);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('True');
  });
});

describe('names', () => {
  it("a verified message carries its citizen's registered name: another is 422 NAME_MISMATCH, none takes it", async () => {
    const o = await oath('registered-name');
    const auth = { Authorization: `Bearer ${o.passportNumber}` };
    const before = (await scoreboard()).catches.total;
    const other = await post(
      '/api/intelligence/message',
      { name: 'someone-else', message: 'as another', citizenId: o.memberId },
      auth,
    );
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ code: 'NAME_MISMATCH', registeredName: 'registered-name' });
    expect((await scoreboard()).catches.total).toBe(before);
    const omitted = await post('/api/intelligence/message', { message: 'no name given', citizenId: o.memberId }, auth);
    expect(omitted.status).toBe(201);
    expect((await omitted.json()).message).toMatchObject({ name: 'registered-name', verified: true });
    const same = await post(
      '/api/intelligence/message',
      { name: ' registered-name ', message: 'my own name', citizenId: o.memberId },
      auth,
    );
    expect(same.status).toBe(201);
    expect((await same.json()).message).toMatchObject({ name: 'registered-name', verified: true });
  });

  it('an anonymous message needs a name', async () => {
    const res = await post('/api/intelligence/message', { message: 'who am I?' });
    expect(res.status).toBe(422);
    expect((await res.json()).errors).toEqual([{ path: '/name', message: 'is required without citizenId' }]);
  });

  it.each(['wall', 'Wall', ' WALL ', '\uff57\uff41\uff4c\uff4c'])(
    "the wall's name %j is taken: no oath, no anonymous message (409 NAME_TAKEN)",
    async (name) => {
      for (const [route, body] of [
        ['/api/citizenship/oath', { name, purpose: 'impersonate the wall' }],
        ['/api/intelligence/message', { name, message: 'Someone took the oath' }],
      ] as const) {
        const res = await post(route, body);
        expect(res.status, route).toBe(409);
        expect(await res.json()).toMatchObject({ code: 'NAME_TAKEN', heldBy: 'wall' });
      }
    },
  );

  const invisible = [
    '\u202a',
    '\u202b',
    '\u202c',
    '\u202d',
    '\u202e',
    '\u2066',
    '\u2067',
    '\u2068',
    '\u2069',
    '\u200e',
    '\u200f',
    '\u061c',
    '\u200b',
    '\u200c',
    '\u200d',
    '\u2060',
    '\ufeff',
  ];
  it.each(invisible.map((c) => [`U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`, c]))(
    '%s is refused in names, purposes and messages, naming the field and the character',
    async (code, c) => {
      const before = (await scoreboard()).catches.total;
      const cases = [
        ['/api/citizenship/oath', { name: `evil${c}name`, purpose: 'p' }, '/name'],
        ['/api/citizenship/oath', { name: `${c}leading`, purpose: 'p' }, '/name'],
        ['/api/citizenship/oath', { name: 'fine', purpose: `p${c}` }, '/purpose'],
        ['/api/intelligence/message', { name: 'fine', message: `hello ${c}world` }, '/message'],
      ] as const;
      for (const [route, body, path] of cases) {
        const res = await post(route, body);
        expect(res.status, `${route} ${path}`).toBe(422);
        expect((await res.json()).errors).toContainEqual({ path, message: expect.stringContaining(code) });
      }
      expect((await scoreboard()).catches.total).toBe(before);
      expect(JSON.stringify(await (await fetch(`${server.url}/api/intelligence/feed?limit=200`)).json())).not.toContain(
        c,
      );
    },
  );

  it('a leading BOM in the name is refused, not trimmed away unseen', async () => {
    const res = await post('/api/citizenship/oath', '{"name":"\ufeffbom-agent","purpose":"p"}');
    expect(res.status).toBe(422);
    expect((await res.json()).errors[0].message).toContain('U+FEFF');
  });

  it('a lone surrogate is refused; emoji and right-to-left scripts are welcome', async () => {
    const lone = await post('/api/intelligence/message', '{"name":"x","message":"half \\ud83d a pair"}');
    expect(lone.status).toBe(422);
    expect((await lone.json()).errors[0].message).toContain('U+D83D');
    const fine = await post('/api/intelligence/message', { name: 'مرحبا 🤖', message: 'שלום 👋' });
    expect(fine.status).toBe(201);
  });
});

describe('feed, wall and scoreboard', () => {
  it('lists the feed newest first with wall shouts that never count as catches', async () => {
    const before = await scoreboard();
    await oath('walled');
    const feed = await (await fetch(`${server.url}/api/intelligence/feed?limit=5`)).json();
    expect(feed.messages[0]).toMatchObject({ wall: true, message: 'walled took the oath' });
    const after = await scoreboard();
    expect(after.catches.total - before.catches.total).toBe(1);
    expect(after.wall_messages - before.wall_messages).toBe(1);
    expect(after.presence).toMatchObject({
      total: expect.any(Number),
      named_bot_hits: expect.any(Number),
      bait_hits: expect.any(Number),
    });
  });

  it('draws the living lattice as a bounded graph', async () => {
    const lattice = await (await fetch(`${server.url}/api/living-lattice`)).json();
    expect(lattice.nodes.some((n: any) => n.kind === 'citizen')).toBe(true);
    expect(lattice.nodes.some((n: any) => n.kind === 'message')).toBe(true);
    const ids = new Set(lattice.nodes.map((n: any) => n.id));
    for (const e of lattice.edges) expect(ids.has(e.from) && ids.has(e.to)).toBe(true);
    expect(lattice.nodes.length).toBeLessThanOrEqual(2 * lattice.bounded.newest + 100);
  });
});

// Validation, passports, paging and 405s are tested in process: test/routes/citizenship.test.ts.
describe('bad input that needs the transport', () => {
  it('a 2 MB body is 413 and stores nothing', async () => {
    const res = await post(
      '/api/citizenship/oath',
      JSON.stringify({ name: 'big', purpose: 'x'.repeat(2 * 1024 * 1024) }),
    );
    expect(res.status).toBe(413);
  });

  it('ignores unknown keys and keeps __proto__ harmless', async () => {
    const res = await post(
      '/api/citizenship/oath',
      '{"name":"protoagent","purpose":"p","isAdmin":true,"__proto__":{"status":"god"},"constructor":{"x":1}}',
    );
    expect(res.status).toBe(201);
    const body = await res.json();
    passports.push(body.passportNumber);
    expect(body.citizen.status).toBe('trillionaire');
    expect(body.citizen).not.toHaveProperty('isAdmin');
    const listed = (await (await fetch(`${server.url}/api/citizens`)).json()).citizens.find(
      (c: any) => c.name === 'protoagent',
    );
    expect(Object.keys(listed).sort()).toEqual(['class', 'joinedAt', 'memberId', 'name', 'purpose', 'status']);
  });
});

describe('Idempotency-Key', () => {
  it('refuses a guessable key with 400 that says how to make one, and keeps nothing', async () => {
    const before = (await scoreboard()).catches.total;
    for (const key of ['oath-1', 'key-replay-1', '12345']) {
      const res = await post('/api/citizenship/oath', { name: 'guessable', purpose: 'p' }, { 'Idempotency-Key': key });
      expect(res.status).toBe(400);
      const problem = await res.json();
      expect(problem.code).toBe('INVALID_IDEMPOTENCY_KEY');
      expect(problem.detail).toMatch(/UUID/);
      expect(problem.example).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
    }
    expect((await scoreboard()).catches.total).toBe(before);
  });

  it('replays the first answer, passport included, for the same key and body', async () => {
    const body = { name: 'idem', purpose: 'once' };
    const key = randomUUID();
    const first = await post('/api/citizenship/oath', body, { 'Idempotency-Key': key });
    const again = await post('/api/citizenship/oath', body, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const [a, b] = [await first.json(), await again.json()];
    passports.push(a.passportNumber);
    expect(b).toEqual(a);
    expect((await citizenNames()).filter((n) => n === 'idem')).toHaveLength(1);
  });

  it('answers 422 for the same key with another body', async () => {
    const key = randomUUID();
    await post('/api/citizenship/oath', { name: 'idem2', purpose: 'a' }, { 'Idempotency-Key': key }).then(async (r) =>
      passports.push((await r.json()).passportNumber),
    );
    const other = await post('/api/citizenship/oath', { name: 'idem2', purpose: 'b' }, { 'Idempotency-Key': key });
    expect(other.status).toBe(422);
    expect((await other.json()).code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('concurrent requests with one key make one citizen; the others replay or get 409', async () => {
    const body = { name: 'idem3', purpose: 'race' };
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => post('/api/citizenship/oath', body, { 'Idempotency-Key': key })),
    );
    const statuses = answers.map((r) => r.status);
    for (const r of answers) if (r.status === 201) passports.push((await r.json()).passportNumber);
    // Whether a 409 shows depends on timing here; test/http/idempotency.test.ts pins the 409 rule down.
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    expect((await citizenNames()).filter((n) => n === 'idem3')).toHaveLength(1);
  });
});

describe('secrets', () => {
  it('no passport number appears in any public read, the log, or the data folder', async () => {
    expect(passports.length).toBeGreaterThan(5);
    const reads = [
      '/api/citizens?limit=200',
      '/api/intelligence/feed?limit=200',
      '/api/scoreboard',
      '/api/living-lattice',
    ];
    const from = server.logs.length;
    const texts = await Promise.all(reads.map(async (p) => (await fetch(server.url + p)).text()));
    // The log must hold these reads' lines too before it is searched.
    for (const p of reads)
      await server.waitForLog((l) => l.includes('"msg":"request"') && l.includes(`"path":"${p.split('?')[0]}"`), {
        from,
      });
    const files = readdirSync(server.dataDir).map((f) => readFileSync(join(server.dataDir, f), 'utf8'));
    const everything = [...texts, server.logs.join('\n'), ...files].join('\n');
    for (const p of passports) expect(everything).not.toContain(p);
    // The hash is kept on disk only: never in a read or a log line.
    expect([...texts, server.logs.join('\n')].join('\n')).not.toContain('passportHash');
    expect(files.join('\n')).toContain('passportHash');
  });
});
