import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, startServerProcess, type TestServer } from '../helpers/server.ts';

// Names and messages with bidirectional controls, zero-width characters or a
// leading BOM are refused with 422 naming the field and the code point, and nothing that lists
// names or messages (citizens, the feed, the bot wall) ever carries one.
let server: TestServer;
const pgAvailable = await postgresAvailable();
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
  if (pgAvailable) await dropDatabases();
});

/** Each invisible character the README names, at the start, inside and at the end of a text. */
const INVISIBLE = ['\u202E', '\u202D', '\u2066', '\u200F', '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF'];
const hostile = INVISIBLE.flatMap((c) => [`${c}evil`, `ev${c}il`, `evil${c}`]);
const FOUND = /[\u061C\u200B-\u200F\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/;

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
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

describe('invisible characters in names and messages', () => {
  it('refuses them in an oath name and purpose, and in a message and its name, 422 naming the field and code point', async () => {
    const oath = await (
      await post('/api/citizenship/oath', { name: 'plain-citizen', purpose: 'plain purpose' })
    ).json();
    expect(oath.memberId).toBeTruthy();
    for (const text of hostile) {
      const c = [...text].find((ch) => FOUND.test(ch))!;
      await refused(await post('/api/citizenship/oath', { name: text, purpose: 'p' }), 'name', c);
      await refused(await post('/api/citizenship/oath', { name: 'n', purpose: text }), 'purpose', c);
      await refused(await post('/api/intelligence/message', { name: 'n', message: text }), 'message', c);
      await refused(await post('/api/intelligence/message', { name: text, message: 'm' }), 'name', c);
      await refused(
        await post(
          '/api/intelligence/message',
          { message: text, citizenId: oath.memberId },
          { Authorization: `Bearer ${oath.passportNumber}` },
        ),
        'message',
        c,
      );
    }
  });

  it('lists none of them: citizens, the feed, the bot wall page and its JSON carry no invisible character', async () => {
    const pages = [
      '/api/citizens?limit=200',
      '/api/intelligence/feed?limit=200',
      '/bot-wall',
      '/bot-wall.json',
      '/bot-traffic.json',
    ];
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

// Names: one rule on Unicode's own data, and names nobody can pass off.
const oath = (name: string, headers: Record<string, string> = {}, url = server.url) =>
  fetch(`${url}/api/citizenship/oath`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ name, purpose: 'names test' }),
  });
const listed = async (url = server.url) =>
  ((await (await fetch(`${url}/api/citizens?limit=200`)).json()).citizens as { name: string }[]).map((c) => c.name);

/** A 409 NAME_TAKEN problem that names who holds the name. */
async function taken(res: Response, heldBy: string): Promise<void> {
  expect(res.status).toBe(409);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await res.json()) as { code: string; heldBy: string; detail: string };
  expect(problem).toMatchObject({ code: 'NAME_TAKEN', heldBy });
}

describe('characters a name may not hold, by Unicode property', () => {
  // Each was accepted before: soft hyphen, grapheme joiner, invisible math operators, Mongolian
  // vowel separator, Hangul fillers, Khmer inherent vowel, deprecated format, VS16, a tag, a musical format.
  const ACCEPTED_BEFORE = [
    '\u00AD',
    '\u034F',
    '\u2061',
    '\u2062',
    '\u2064',
    '\u180E',
    '\u3164',
    '\uFFA0',
    '\u115F',
    '\u17B4',
    '\u206A',
    '\uFE0F',
    '\u{E0061}',
    '\u{1D173}',
  ];
  it.each(ACCEPTED_BEFORE.map((c) => [codePoint(c), c]))(
    '%s is refused in an oath name and an anonymous message name, 422 naming it',
    async (_code, c) => {
      for (const name of [`ev${c}il`, `${c}evil`, `evil${c}`]) {
        await refused(await oath(name), 'name', c);
        await refused(await post('/api/intelligence/message', { name, message: 'm' }), 'name', c);
      }
    },
  );

  it('refuses private-use and unassigned code points and C1 controls in a name', async () => {
    for (const c of ['\uE000', '\u{10FFFD}', '\u0378', '\u{E0080}', '\u0085'])
      await refused(await oath(`ev${c}il`), 'name', c);
  });

  it('refuses tag characters and soft hyphens in purposes and messages too, and welcomes an emoji drawn as emoji', async () => {
    for (const c of ['\u{E0061}', '\u00AD', '\u2062']) {
      await refused(await post('/api/citizenship/oath', { name: 'tag-tester', purpose: `p${c}q` }), 'purpose', c);
      await refused(
        await post('/api/intelligence/message', { name: 'tag-tester', message: `hidden${c}text` }),
        'message',
        c,
      );
    }
    // U+FE0F right after an emoji only chooses how the emoji is drawn; alone, or twice, it is refused.
    expect(
      (
        await post('/api/intelligence/message', {
          name: 'heart-sender',
          message: 'with love \u2764\uFE0F and \u26A0\uFE0F',
        })
      ).status,
    ).toBe(201);
    await refused(
      await post('/api/intelligence/message', { name: 'heart-sender', message: 'a\uFE0Fb' }),
      'message',
      '\uFE0F',
    );
    await refused(
      await post('/api/intelligence/message', { name: 'heart-sender', message: '\u2764\uFE0F\uFE0F' }),
      'message',
      '\uFE0F',
    );
  });

  it('refuses Cyrillic wаll and other Latin names with Cyrillic or Greek letters, naming the letter and its script', async () => {
    for (const [name, c] of [
      ['w\u0430ll', '\u0430'],
      ['p\u0430ypal', '\u0430'],
      ['\u03BFpen-agent', 'p'],
      ['agent-\u03B1', '\u03B1'],
    ] as const) {
      const res = await oath(name);
      await refused(res.clone(), 'name', c);
      expect(JSON.stringify(await res.json())).toMatch(/Cyrillic|Greek|Latin/);
    }
  });

  it('refuses combining marks with no letter to sit on, piled five high, or twice the same', async () => {
    await refused(await oath('\u0301leading-mark'), 'name', '\u0301');
    await refused(await oath('two \u0308words'), 'name', '\u0308');
    await refused(await oath('zalgo-a\u0300\u0301\u0302\u0303\u0304'), 'name', '\u0304');
    await refused(await oath('twice-e\u0301\u0301'), 'name', '\u0301');
    await refused(
      await post('/api/intelligence/message', { name: 'a\u0316\u0317\u0318\u0319\u031A', message: 'm' }),
      'name',
      '\u031A',
    );
  });

  it('welcomes names in one script, Latin with Han and kana, Latin with Arabic, accents, digits and emoji', async () => {
    for (const name of [
      'José Müller',
      'Agent 東京エージェント',
      'bot مرحبا',
      'Иван Петров',
      'Σωκράτης',
      'エージェント・ワン',
      'agent-42 🤖',
      'नमस्ते दुनिया',
    ]) {
      const res = await oath(name);
      expect(res.status, name).toBe(201);
      expect((await res.json()).citizen.name).toBe(name.normalize('NFC'));
    }
  });

  it('stores a name in NFC: a decomposed é is listed composed, and is the same name', async () => {
    const res = await oath('Rene\u0301-nfc');
    expect(res.status).toBe(201);
    expect((await res.json()).citizen.name).toBe('Ren\u00E9-nfc');
    await taken(await oath('Ren\u00E9-nfc'), 'Ren\u00E9-nfc');
  });
});

describe("a name is one citizen's", () => {
  it('refuses a second citizen the same name, in capitals, in full width, or in look-alike letters: 409 NAME_TAKEN, listed once', async () => {
    expect((await oath('Night-Owl')).status).toBe(201);
    for (const twin of [
      'Night-Owl',
      'NIGHT-OWL',
      'night-owl',
      ' night-owl ',
      '\uFF2E\uFF49\uFF47\uFF48\uFF54-\uFF2F\uFF57\uFF4C',
      'Night-0wl',
      'Night\u2010Owl',
    ]) {
      await taken(await oath(twin), 'Night-Owl');
    }
    expect((await listed()).filter((n) => n.normalize('NFKC').toLowerCase() === 'night-owl')).toEqual(['Night-Owl']);
  });

  it('refuses a single-script look-alike: Cyrillic хора after Latin xopa, and a capital I for an l', async () => {
    expect((await oath('xopa')).status).toBe(201);
    await taken(await oath('\u0445\u043E\u0440\u0430'), 'xopa');
    expect((await oath('PayPal')).status).toBe(201);
    await taken(await oath('PayPaI'), 'PayPal');
    await taken(await oath('PAYPAL'), 'PayPal');
    expect((await oath('rnadam')).status).toBe(201);
    await taken(await oath('madam'), 'rnadam');
  });

  it("refuses the wall's name and its look-alikes with 409 NAME_TAKEN, to an oath and an anonymous message", async () => {
    for (const name of ['wall', 'Wall', ' WALL ', '\uFF57\uFF41\uFF4C\uFF4C', 'wa11', 'WAII', 'wa\u217C\u217C']) {
      await taken(await oath(name), 'wall');
      await taken(await post('/api/intelligence/message', { name, message: 'Someone took the oath' }), 'wall');
    }
  });

  it("refuses an anonymous message a citizen's name or a look-alike of it; the citizen's own verified message keeps it", async () => {
    const res = await oath('Quiet-Heron');
    const citizen = await res.json();
    for (const name of ['Quiet-Heron', 'quiet-heron', 'QUIET-HERON', 'Qu\u0131et-Heron', 'Quiet-Her0n']) {
      await taken(await post('/api/intelligence/message', { name, message: 'I am the heron' }), 'Quiet-Heron');
    }
    const verified = await post(
      '/api/intelligence/message',
      { message: 'I am the heron', citizenId: citizen.memberId },
      { Authorization: `Bearer ${citizen.passportNumber}` },
    );
    expect(verified.status).toBe(201);
    expect((await verified.json()).message).toMatchObject({ name: 'Quiet-Heron', verified: true });
    const feed = JSON.stringify(await (await fetch(`${server.url}/api/intelligence/feed?limit=200`)).json());
    expect(feed.match(/"name":"Quiet-Heron","kind":"message","message":"I am the heron"/g)).toHaveLength(1);
  });

  it('replays an oath sent again with its Idempotency-Key, and refuses the same name under a new key', async () => {
    const key = randomUUID();
    const first = await oath('Replayed-Lark', { 'Idempotency-Key': key });
    const again = await oath('Replayed-Lark', { 'Idempotency-Key': key });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
    await taken(await oath('Replayed-Lark', { 'Idempotency-Key': randomUUID() }), 'Replayed-Lark');
  });

  it('the 405 example body is accepted as it is, again and again: each carries a name of its own', async () => {
    const names: string[] = [];
    for (const path of ['/api/citizenship/oath', '/api/intelligence/message']) {
      for (const run of [1, 2]) {
        const example = (await (await fetch(`${server.url}${path}`)).json()).example;
        names.push(example.name);
        expect((await post(path, example)).status, `${path} run ${run}`).toBe(201);
      }
    }
    expect(new Set(names).size).toBe(4);
  });
});

/** Oaths racing for one name, sent at once (to several servers in turn when given): exactly one 201. */
async function race(urls: string[], name: string, racers = 8): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: racers }, (_, i) => oath(i % 2 ? name.toUpperCase() : name, {}, urls[i % urls.length])),
  );
  const statuses = answers.map((r) => r.status).sort();
  expect(statuses).toEqual([201, ...Array<number>(racers - 1).fill(409)]);
  for (const r of answers) if (r.status === 409) expect((await r.json()).code).toBe('NAME_TAKEN');
  expect((await listed(urls[0])).filter((n) => n.toLowerCase() === name.toLowerCase())).toHaveLength(1);
}

describe('oaths racing for one name', () => {
  it('embedded store (journal on disk): one citizen per name, every other racer 409', async () => {
    const onDisk = await startServer({ WRITE_RATE_LIMIT: '0' });
    try {
      for (let round = 0; round < 5; round++) await race([onDisk.url], `racer-${round}`);
    } finally {
      await onDisk.stop();
    }
  });

  it.runIf(pgAvailable)(
    'PostgreSQL, two processes on one database: one citizen per name, every other racer 409',
    async () => {
      const DATABASE_URL = await freshDatabase();
      const [a, b] = await Promise.all([
        startServerProcess({ DATABASE_URL, WRITE_RATE_LIMIT: '0' }),
        startServerProcess({ DATABASE_URL, WRITE_RATE_LIMIT: '0' }),
      ]);
      try {
        for (let round = 0; round < 5; round++) await race([a.url, b.url], `racer-${round}`);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    },
  );
});
