import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';

// The scoreboard, the list's count and the drift metrics read counts PostgreSQL keeps in each
// writing transaction; here two processes write at once, and every figure must equal count(*).
const available = await postgresAvailable();

// Every write below is in flight at once, from one address.
const env = (DATABASE_URL: string) => ({ DATABASE_URL, WRITE_RATE_LIMIT: '0', MAX_CONNECTIONS_PER_CLIENT: '1000' });
let a: ServerProcess;
let b: ServerProcess;
let db: pg.Pool;
beforeAll(async () => {
  if (!available) return;
  const DATABASE_URL = await freshDatabase();
  db = new pg.Pool({ connectionString: DATABASE_URL });
  [a, b] = await Promise.all([startServerProcess(env(DATABASE_URL)), startServerProcess(env(DATABASE_URL))]);
});
afterAll(async () => {
  if (!available) return;
  await Promise.all([a?.stop(), b?.stop(), db?.end()]);
  await dropDatabases();
});

const CLASSES = ['agent', 'crawler', 'intelligence', 'bot'];
const post = async (s: ServerProcess, path: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(s.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};
const get = async (s: ServerProcess, path: string) => (await (await fetch(s.url + path)).json()) as Record<string, any>;
const good = { steps: [{ action: 'read', tool: 'read_convert' }] };

/** What the kept counts must say: counted now, row by row. */
async function counted() {
  const byClass = Object.fromEntries(
    (
      await db.query<{ class: string; n: number }>('SELECT class, count(*)::int AS n FROM citizens GROUP BY class')
    ).rows.map((r) => [r.class, r.n]),
  );
  const feed = (
    await db.query(
      `SELECT count(*) FILTER (WHERE NOT wall AND kind = 'message')::int AS messages, count(*) FILTER (WHERE NOT wall AND kind = 'question')::int AS questions,
              count(*) FILTER (WHERE wall)::int AS wall FROM messages`,
    )
  ).rows[0];
  const drift = (
    await db.query(
      'SELECT count(*)::int AS samples, coalesce(sum(contraction_attempts), 0)::int AS contractions, count(*) FILTER (WHERE fail_closed)::int AS fail_closed FROM drift_samples',
    )
  ).rows[0];
  const byVerdict = Object.fromEntries(
    (
      await db.query<{ verdict: string; n: number }>(
        'SELECT verdict, count(*)::int AS n FROM drift_samples GROUP BY verdict',
      )
    ).rows.map((r) => [r.verdict, r.n]),
  );
  const citizens = Object.values(byClass).reduce((x, y) => x + y, 0);
  return { byClass, citizens, feed, drift, byVerdict };
}

describe.runIf(available)('kept counts on PostgreSQL, two processes writing at once', () => {
  it('equal count(*) in the scoreboard, the list and the drift metrics of both processes', async () => {
    const run = randomUUID().slice(0, 8);
    // Oaths first (the verified messages need their passports), then everything else at once.
    const oaths = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        post(i % 2 ? a : b, '/api/citizenship/oath', {
          name: `counted-${run}-${i}`,
          class: CLASSES[i % CLASSES.length],
          purpose: 'be counted',
        }),
      ),
    );
    expect(oaths.map((o) => o.status)).toEqual(Array(40).fill(201));
    const writes = [
      ...Array.from({ length: 40 }, (_, i) =>
        post(i % 2 ? b : a, '/api/citizenship/oath', {
          name: `late-${run}-${i}`,
          class: CLASSES[(i + 1) % CLASSES.length],
          purpose: 'be counted late',
        }),
      ),
      ...Array.from({ length: 30 }, (_, i) =>
        post(i % 2 ? a : b, '/api/intelligence/message', {
          name: `anon-${run}-${i}`,
          kind: i % 3 ? 'message' : 'question',
          message: `counted ${i}`,
        }),
      ),
      ...oaths
        .slice(0, 20)
        .map((o, i) =>
          post(
            i % 2 ? b : a,
            '/api/intelligence/message',
            { citizenId: o.body.memberId, kind: i % 4 ? 'message' : 'question', message: 'verified and counted' },
            { Authorization: `Bearer ${o.body.passportNumber}` },
          ),
        ),
      ...Array.from({ length: 12 }, (_, i) =>
        post(i % 2 ? a : b, '/api/omip/dual-exchange', {
          agents: [
            { id: 'sovereign-a', proposal: { plan: good } },
            { id: i % 3 ? 'sovereign-b' : 'stranger', proposal: { plan: good } },
          ],
        }),
      ),
      ...Array.from({ length: 12 }, (_, i) =>
        post(i % 2 ? b : a, '/api/omip/score', { entity_id: i % 2 ? 'sovereign-a' : 'nobody', plan: good }),
      ),
    ];
    const answers = await Promise.all(writes);
    expect(
      answers.every((r) => r.status === 200 || r.status === 201),
      JSON.stringify(answers.filter((r) => r.status >= 300)),
    ).toBe(true);

    const truth = await counted();
    expect(truth.citizens).toBe(80);
    expect(truth.feed.messages + truth.feed.questions).toBe(50);
    expect(truth.drift.samples).toBe(36);
    for (const s of [a, b]) {
      const board = await get(s, '/api/scoreboard');
      expect(board.citizens).toEqual({ total: truth.citizens, by_class: truth.byClass });
      expect(board.catches).toEqual({
        total: truth.citizens + truth.feed.messages + truth.feed.questions,
        oaths: truth.citizens,
        messages: truth.feed.messages,
        questions: truth.feed.questions,
      });
      expect(board.wall_messages).toBe(truth.feed.wall);
      expect((await get(s, '/api/citizens?limit=1')).count).toBe(truth.citizens);
      const drift = await get(s, '/api/omip/drift');
      expect({ samples: drift.samples, contractions: drift.contraction_count, fail_closed: drift.fail_closed }).toEqual(
        truth.drift,
      );
      expect(Object.fromEntries(Object.entries(drift.by_verdict).filter(([, n]) => n !== 0))).toEqual(truth.byVerdict);
    }
  });
});
