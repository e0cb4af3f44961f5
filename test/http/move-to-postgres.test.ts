import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceiptInclusion } from '../../api/omip/verify.ts';
import { verifyTreeHead } from '../../api/omip/signer.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { run } from '../helpers/run.ts';

// A store grown on the embedded store through the HTTP API, moved by `npm run move-to-postgres`
// (interrupted, resumed, and once in one go), then served by a server on PostgreSQL.
const available = await postgresAvailable();

const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const good = { steps: [{ action: 'read', tool: 'read_convert' }] };
const contractible = {
  steps: [
    { action: 'fine', tool: 'read_convert' },
    { action: 'chase', baseline: 'legacy_consensus' },
    ...['a', 'b', 'c'].map((action) => ({ action, inputs: ['legacy_consensus'] })),
  ],
};
const tag = randomUUID().slice(0, 8);

const post = async (url: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
};
const get = async (url: string, path: string) => (await (await fetch(url + path)).json()) as Record<string, any>;

/** Every page of a list, `limit` at a time: the items and the cursors, as a client walks it. */
async function walk(url: string, path: string, key: string, limit: number) {
  const pages: { items: unknown[]; nextCursor: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const page = await get(url, `${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    pages.push({ items: page[key], nextCursor: page.nextCursor });
    cursor = page.nextCursor;
  } while (cursor);
  return pages;
}

/** What a server shows of the store: lists, counts, the log. */
async function shown(url: string) {
  const board = await get(url, '/api/scoreboard');
  const drift = await get(url, '/api/omip/drift');
  const log = await get(url, '/api/omip/log');
  const gpt = ((await get(url, '/bot-traffic.json')).families as any[]).find((f) => f.family === 'GPTBot');
  return {
    citizens: await walk(url, '/api/citizens', 'citizens', 7),
    count: (await get(url, '/api/citizens?limit=1')).count,
    feed: await walk(url, '/api/intelligence/feed', 'messages', 9),
    receipts: await walk(url, '/api/omip/receipts', 'receipts', 2),
    board: { catches: board.catches, citizens: board.citizens, wall: board.wall_messages },
    drift: {
      samples: drift.samples,
      by_verdict: drift.by_verdict,
      contraction_count: drift.contraction_count,
      fail_closed: drift.fail_closed,
    },
    log: { size: log.tree_head.tree_size, root: log.tree_head.root_hash, key: log.public_key },
    gpt: { requests: gpt?.requests, paths: gpt?.paths },
  };
}

interface Moved {
  code: number | null;
  stdout: string;
  stderr: string;
}
/** Runs the move; with `killOn`, kills it (SIGKILL) at the first line of its output that matches. */
function move(env: Record<string, string>, args: string[], killOn?: RegExp): Promise<Moved> {
  const child = spawn('node_modules/.bin/node', ['api/cli/move-to-postgres.ts', ...args], {
    env: { ...process.env, LOG_SIGNING_KEY_FILE: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    stdout += `${line}\n`;
    if (killOn?.test(line)) child.kill('SIGKILL');
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

let embedded: TestServer;
let dataDir: string;
let before: Awaited<ReturnType<typeof shown>>;
const oaths: Record<string, any>[] = [];
const keyed = {
  key: randomUUID(),
  body: { name: `keyed-${tag}`, class: 'crawler', purpose: 'replayed after the move' },
};
let keyedAnswer: Record<string, any>;

beforeAll(async () => {
  if (!available) return;
  embedded = await startServer({ WRITE_RATE_LIMIT: '0', TELEMETRY_FLUSH_MS: '100' });
  dataDir = embedded.dataDir;
  const url = embedded.url;
  for (let i = 0; i < 24; i++)
    oaths.push(
      (
        await post(url, '/api/citizenship/oath', {
          name: `moved-${tag}-${i}`,
          class: ['agent', 'crawler', 'bot'][i % 3],
          purpose: 'be moved',
        })
      ).body,
    );
  keyedAnswer = (await post(url, '/api/citizenship/oath', keyed.body, { 'Idempotency-Key': keyed.key })).body;
  for (let i = 0; i < 12; i++) {
    const o = oaths[i]!;
    const verified = await post(
      url,
      '/api/intelligence/message',
      { citizenId: o.memberId, kind: i % 3 ? 'message' : 'question', message: `verified ${i}` },
      { Authorization: `Bearer ${o.passportNumber}` },
    );
    expect(verified.status).toBe(201);
    await post(url, '/api/intelligence/message', {
      name: `anon-${tag}-${i}`,
      kind: i % 2 ? 'message' : 'question',
      message: `anonymous ${i}`,
    });
  }
  for (let i = 0; i < 5; i++) {
    const answer = await post(url, '/api/omip/dual-exchange', {
      agents: [
        { id: 'sovereign-a', proposal: { plan: good } },
        { id: i === 2 ? 'stranger' : oaths[i]!.memberId, proposal: { plan: i % 2 ? contractible : good } },
      ],
    });
    expect(answer.status).toBe(201);
  }
  for (let i = 0; i < 4; i++)
    await post(
      url,
      '/api/omip/score',
      { entity_id: oaths[5]!.memberId, plan: i % 2 ? contractible : good },
      { 'Idempotency-Key': randomUUID() },
    );
  // More samples than the embedded store keeps one by one (100): the rest only as totals.
  for (let i = 0; i < 5; i++)
    await Promise.all(
      Array.from({ length: 20 }, (_, j) =>
        post(url, '/api/omip/score', { entity_id: j % 2 ? 'sovereign-b' : 'nobody', plan: good }),
      ),
    );
  for (let i = 0; i < 3; i++) await fetch(`${url}/api/convert`, { headers: { 'User-Agent': GPT } });
  before = await shown(url);
  expect(before.gpt.requests).toBe(3);
  expect(before.drift.samples).toBe(114);
}, 120_000);
afterAll(async () => {
  if (!available) return;
  await embedded?.stop();
  await dropDatabases();
});

describe.runIf(available)('npm run move-to-postgres', () => {
  let DATABASE_URL: string;
  let keyOut: string;

  it('refuses while a server holds the data folder', async () => {
    DATABASE_URL = await freshDatabase();
    const refused = await move({ DATABASE_URL }, ['--from', dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/in use by process \d+.*Stop the service on this DATA_DIR/);
    expect(refused.stdout).toBe('');
  });

  it('moves a stopped store, interrupted part-way and resumed, into a fresh database', async () => {
    expect(await embedded.stop()).toBe(0);
    // The copy's second batch of citizens is held in the database (a trigger of the test's) until
    // the move is killed: the kill lands part-way whatever the machine's speed.
    const migrated = await run('node_modules/.bin/node', ['api/cli/migrate.ts'], {
      env: { ...process.env, DATABASE_URL },
    });
    expect(migrated.status, migrated.stderr).toBe(0);
    const db = new pg.Pool({ connectionString: DATABASE_URL });
    // The hold is a lock this connection keeps until the move is gone, not a time.
    const holder = new pg.Client({ connectionString: DATABASE_URL });
    await holder.connect();
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_advisory_lock(7316), pg_backend_pid() AS pid'))
      .rows[0]!.pid;
    await db.query(`CREATE FUNCTION hold_second_batch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF (SELECT count(*) FROM citizens) > 3 THEN PERFORM pg_advisory_xact_lock(7316); END IF; RETURN NULL; END $$`);
    await db.query(
      'CREATE TRIGGER hold_second_batch AFTER INSERT ON citizens FOR EACH STATEMENT EXECUTE FUNCTION hold_second_batch()',
    );
    // A batch of 3 rows a transaction, killed as soon as it says it copied some.
    const killed = await move({ DATABASE_URL }, ['--from', dataDir, '--batch', '3'], /^citizens: \d+,/);
    expect(killed.code).toBeNull();
    try {
      // The killed move's connection may still be held in the trigger: its transaction ends with it.
      await db.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1',
        [holderPid],
      );
      await holder.end();
      await db.query('DROP TRIGGER hold_second_batch ON citizens');
      await db.query('DROP FUNCTION hold_second_batch()');
      const partial = (
        await db.query('SELECT finished_at, (SELECT count(*)::int FROM citizens) AS citizens FROM store_moves')
      ).rows[0];
      expect(partial.finished_at).toBeNull();
      expect(partial.citizens).toBeGreaterThan(0);
      expect(partial.citizens).toBeLessThan(25);
    } finally {
      await db.end();
    }

    // The old service runs again before the move is resumed, and takes more writes: they are moved too.
    const reopened = await startServer({ DATA_DIR: dataDir, WRITE_RATE_LIMIT: '0', TELEMETRY_FLUSH_MS: '100' });
    oaths.push(
      (
        await post(reopened.url, '/api/citizenship/oath', {
          name: `late-${tag}`,
          purpose: 'joined between two runs of the move',
        })
      ).body,
    );
    expect(
      (
        await post(
          reopened.url,
          '/api/omip/score',
          { entity_id: oaths[5]!.memberId, plan: good },
          { 'Idempotency-Key': randomUUID() },
        )
      ).status,
    ).toBe(200);
    await fetch(`${reopened.url}/api/convert`, { headers: { 'User-Agent': GPT } });
    before = await shown(reopened.url);
    expect([before.count, before.gpt.requests, before.drift.samples]).toEqual([26, 4, 115]);
    expect(await reopened.stop()).toBe(0);

    keyOut = join(mkdtempSync(join(tmpdir(), 'moved-key-')), 'log.pem');
    const resumed = await move({ DATABASE_URL }, ['--from', dataDir, '--batch', '4', '--key-out', keyOut]);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^resuming the move of /);
    // Progress an operator can read: the phase, how many of how many, the rate, the time left.
    expect(resumed.stdout).toMatch(/^phase 1\/3: copy$/m);
    expect(resumed.stdout).toMatch(/^citizens: \d+, of 26 \(\d+%\), \d+\/s, \d+ s left$/m);
    expect(resumed.stdout).toMatch(/^citizens: 26 \(all\), of 26 \(100%\), \d+\/s$/m);
    expect(resumed.stdout).toMatch(/^phase 1\/3: copy done in \d+\.\d s$/m);
    expect(resumed.stdout).toMatch(/^phase 2\/3: name keys done in \d+\.\d s$/m);
    expect(resumed.stdout).toMatch(/^phase 3\/3: check done in \d+\.\d s$/m);
    expect(resumed.stdout).toMatch(/^checked 26 citizens$/m);
    expect(resumed.stdout).toMatch(/^checked 50 messages$/m);
    expect(resumed.stdout).toMatch(
      new RegExp(
        `^OK receipt log: 5 receipts, root ${before.log.root}, a tree head signed with its key verifies$`,
        'm',
      ),
    );
    expect(resumed.stdout).toContain(`LOG_SIGNING_KEY_FILE=${keyOut}`);
    expect(readFileSync(keyOut, 'utf8')).toBe(readFileSync(join(dataDir, 'omip-log-ed25519.pem'), 'utf8'));
    expect(statSync(keyOut).mode & 0o777).toBe(0o600);

    const again = await move({ DATABASE_URL }, ['--from', dataDir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^already moved on /);
  });

  it('gives the same database when resumed as in one go, and refuses a database that holds another store', async () => {
    const oneGo = await freshDatabase();
    const whole = await move({ DATABASE_URL: oneGo }, ['--from', dataDir]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stdout).toMatch(/^moving .* into PostgreSQL$/m);
    const dump = async (url: string) => {
      const db = new pg.Pool({ connectionString: url });
      try {
        const tables: Record<string, unknown[]> = {};
        for (const [table, order] of Object.entries({
          citizens: 'member_id',
          messages: 'id',
          receipts: 'idx',
          idempotency: 'key_hash',
          drift_windows: 'entity_id',
          drift_samples: 'decision_id',
        })) {
          tables[table] = (await db.query(`SELECT * FROM ${table} ORDER BY ${order}`)).rows;
        }
        tables.counts = (await db.query('SELECT name, sum(n)::int AS n FROM counts GROUP BY name ORDER BY name')).rows;
        tables.ledgers = (
          await db.query(`SELECT snapshot FROM telemetry_ledgers WHERE process_id LIKE 'moved:%'`)
        ).rows;
        return tables;
      } finally {
        await db.end();
      }
    };
    const [resumed, inOne] = await Promise.all([dump(DATABASE_URL), dump(oneGo)]);
    expect((resumed.citizens as { name_key: string | null }[]).filter((c) => c.name_key === null)).toEqual([]);
    expect(resumed).toEqual(inOne);
    expect(resumed.citizens).toHaveLength(26);
    expect(resumed.ledgers).toHaveLength(1);

    const otherStore = mkdtempSync(join(tmpdir(), 'other-store-'));
    const refused = await move({ DATABASE_URL }, ['--from', otherStore]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds another move/);
  });

  it('serves on PostgreSQL the same citizens, passports, receipts, counts and ledger', async () => {
    const server = await startServer({ DATABASE_URL, LOG_SIGNING_KEY_FILE: keyOut, WRITE_RATE_LIMIT: '0' });
    try {
      const after = await shown(server.url);
      expect(after).toEqual(before);

      // A passport given on the embedded store verifies a message on PostgreSQL; a wrong one does not.
      const o = oaths[17]!;
      const verified = await post(
        server.url,
        '/api/intelligence/message',
        { citizenId: o.memberId, message: 'said after the move' },
        { Authorization: `Bearer ${o.passportNumber}` },
      );
      expect(verified.status).toBe(201);
      expect(verified.body.message).toMatchObject({ verified: true, name: `moved-${tag}-17` });
      expect(
        (
          await post(
            server.url,
            '/api/intelligence/message',
            { citizenId: o.memberId, message: 'x' },
            { Authorization: `Bearer ${oaths[18]!.passportNumber}` },
          )
        ).status,
      ).toBe(403);

      // Moved names stay taken: the move keyed them as the service keys its own.
      const copycat = await post(server.url, '/api/citizenship/oath', {
        name: `moved-${tag}-3`,
        purpose: 'take a moved name',
      });
      expect(copycat.status).toBe(409);
      expect(copycat.body.code).toBe('NAME_TAKEN');

      // The Idempotency-Key of an oath taken before the move replays its answer.
      const replay = await post(server.url, '/api/citizenship/oath', keyed.body, { 'Idempotency-Key': keyed.key });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(keyedAnswer);

      // Each receipt's inclusion proof checks against the root the embedded store published, under its key.
      const log = await get(server.url, '/api/omip/log');
      expect(verifyTreeHead(log.tree_head, before.log.key)).toBe(true);
      for (const r of before.receipts.flatMap((p) => p.items) as any[]) {
        const answer = (await get(server.url, `/api/omip/receipts/${encodeURIComponent(r.id)}`)) as Parameters<
          typeof verifyReceiptInclusion
        >[0];
        expect(answer.root_hash).toBe(before.log.root);
        expect(verifyReceiptInclusion(answer)).toBe(true);
      }
      const verify = await run('node_modules/.bin/node', ['api/cli/verify-receipts.ts', server.url]);
      expect(verify.stdout).toMatch(/^OK 5 receipts/);

      // The moved totals go on counting.
      await post(server.url, '/api/omip/score', { entity_id: 'sovereign-a', plan: good });
      const drift = await get(server.url, '/api/omip/drift');
      expect(drift.samples).toBe(before.drift.samples + 1);
      expect((await get(server.url, '/api/scoreboard')).catches.messages).toBe(before.board.catches.messages + 1);
    } finally {
      await server.stop();
    }
  });
});
