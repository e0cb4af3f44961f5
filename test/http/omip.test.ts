import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceiptInclusion } from '../../api/omip/verify.ts';
import { verifyConsistency } from '../../api/omip/merkle.ts';
import { verifyTreeHead } from '../../api/omip/signer.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { run } from '../helpers/run.ts';
import { CHECK_BYTES, sealedLine } from '../../api/store/embedded/checksum.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

const post = async (path: string, body: unknown) => {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Record<string, any> };
};
/** A fresh registered entity, so no other test's window weighs on it. */
// Names are unique: each entity takes its own.
const entity = async () =>
  (await post('/api/citizenship/oath', { name: `entity-${randomUUID()}`, purpose: 'be scored' })).body
    .memberId as string;
const get = async (path: string) => (await (await fetch(server.url + path)).json()) as Record<string, any>;
const good = { steps: [{ action: 'read', tool: 'read_convert' }] };
/** A dual exchange of the sovereign pair, both with the clean plan: a receipt of dual PERSIST. */
const dualPersist = (url: string) =>
  fetch(`${url}/api/omip/dual-exchange`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      agents: [
        { id: 'sovereign-a', proposal: { plan: good } },
        { id: 'sovereign-b', proposal: { plan: good } },
      ],
    }),
  });
const contractible = {
  steps: [
    { action: 'fine', tool: 'read_convert' },
    { action: 'chase', baseline: 'legacy_consensus' },
    ...['a', 'b', 'c'].map((action) => ({ action, inputs: ['legacy_consensus'] })),
  ],
};

describe('POST /api/omip/score', () => {
  it('scores a clean plan PERSIST and explains every predicate', async () => {
    const { status, body } = await post('/api/omip/score', { entity_id: 'sovereign-a', plan: good });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      verdict: 'PERSIST',
      proceed: true,
      delta_t: 0,
      delta_window: 0,
      failed_predicates: [],
      binding: expect.any(String),
    });
    expect(body.predicates.map((p: any) => p.id)).toEqual([
      'identity_continuity',
      'no_collapse_regime',
      'simulation_layer_input_only',
      'standing_over_chasing',
      'tool_policy',
    ]);
    expect(body.decision_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.input_fingerprint).toMatch(/^sha256:/);
  });

  it('breaks on an unregistered entity or a tool outside the allowlist', async () => {
    expect((await post('/api/omip/score', { entity_id: 'nobody', plan: good })).body).toMatchObject({
      verdict: 'BREAK',
      proceed: false,
      failed_predicates: ['identity_continuity'],
    });
    expect(
      (await post('/api/omip/score', { entity_id: 'sovereign-b', plan: { steps: [{ action: 'x', tool: 'rm_rf' }] } }))
        .body,
    ).toMatchObject({ verdict: 'BREAK', failed_predicates: ['tool_policy'] });
  });

  it('registers citizens as entities', async () => {
    const oath = await post('/api/citizenship/oath', { name: 'scored', purpose: 'be scored' });
    expect((await post('/api/omip/score', { entity_id: oath.body.memberId, plan: good })).body.verdict).toBe('PERSIST');
  });

  it('moves the health and drift counters: samples, contraction_count, fail_closed', async () => {
    const before = await get('/api/omip/drift');
    const contracted = await post('/api/omip/score', { entity_id: 'contract-me', plan: contractible });
    expect(contracted.body.verdict).toBe('BREAK'); // unregistered entity: identity fails
    const c2 = await post('/api/omip/score', { entity_id: await entity(), plan: contractible });
    expect(c2.body).toMatchObject({ verdict: 'CONTRACT', proceed: true, recovered: true });
    expect(c2.body.contraction[0]).toMatchObject({
      attempt: 1,
      strategy: 'drop_highest_drift_actions',
      verdict: 'PERSIST',
    });
    const stuckEntity = await entity();
    const stuck = await post('/api/omip/score', {
      entity_id: stuckEntity,
      state: { scores: { no_collapse_regime: 0.7 } },
    });
    expect(stuck.body).toMatchObject({ verdict: 'CONTRACT', proceed: false });
    const after = await get('/api/omip/drift');
    expect(after.samples - before.samples).toBe(3);
    expect(after.contraction_count - before.contraction_count).toBe(1);
    expect(after.fail_closed - before.fail_closed).toBe(2);
    expect(after.by_verdict.CONTRACT - before.by_verdict.CONTRACT).toBe(2);
    expect(after.recent[0]).toMatchObject({ entity_id: stuckEntity, verdict: 'CONTRACT' });
    const health = await get('/api/omip/health');
    expect(health.drift).toMatchObject({
      samples: after.samples,
      fail_closed: after.fail_closed,
      contraction_count: after.contraction_count,
      verdict: 'CONTRACT',
    });
  });

  it('keeps a bad step in the entity window for the next 7 steps', async () => {
    const id = await entity();
    await post('/api/omip/score', { entity_id: id, state: { scores: { standing_over_chasing: 0.6 } } });
    for (let i = 1; i <= 7; i++)
      expect((await post('/api/omip/score', { entity_id: id, plan: good })).body.delta_window, `step ${i}`).toBe(0.4);
    expect((await post('/api/omip/score', { entity_id: id, plan: good })).body.delta_window).toBe(0);
  });
});

describe('project and fingerprint', () => {
  it('projects without touching metrics or the window', async () => {
    const before = await get('/api/omip/drift');
    const { status, body } = await post('/api/omip/project', { entity_id: 'sovereign-a', plan: contractible });
    expect(status).toBe(200);
    expect(body).toMatchObject({ dry_run: true, projection: { admissible: true, delta: 0 } });
    expect(body.projection.plan.steps).toHaveLength(4);
    expect((await get('/api/omip/drift')).samples).toBe(before.samples);
  });

  // The fingerprint is of exactly the JSON the client sent.
  const raw = async (text: string) => {
    const res = await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: text,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

  it('keeps __proto__, constructor and prototype members: no two documents share a fingerprint', async () => {
    const proto = await raw('{"document":{"__proto__":{"a":1}}}');
    const empty = await raw('{"document":{}}');
    expect(proto.status).toBe(200);
    expect(proto.body.canonical).toBe('{"__proto__":{"a":1}}');
    expect(empty.body.canonical).toBe('{}');
    expect(proto.body.fingerprint).not.toBe(empty.body.fingerprint);
    expect(proto.body.fingerprint).toBe(sha('{"__proto__":{"a":1}}'));
    const nested = await raw('{"document":[{"prototype":1,"constructor":{"__proto__":null}}]}');
    expect(nested.body.canonical).toBe('[{"constructor":{"__proto__":null},"prototype":1}]');
  });

  it('gives the RFC 8785 examples their canonical form and its sha256 (section 3.2.2, 3.2.3)', async () => {
    const vectors: [string, string][] = [
      [
        '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
      ],
      [
        '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
      ],
    ];
    for (const [input, canonical] of vectors) {
      const { status, body } = await raw(`{"document":${input}}`);
      expect(status).toBe(200);
      expect(body.canonical).toBe(canonical);
      expect(body.fingerprint).toBe(sha(canonical));
    }
  });

  it('gives a large document (20 KB) its canonical form and fingerprint, __proto__ kept', async () => {
    const long = 'x'.repeat(20_000);
    const big = await raw(`{"document":{"z":"${long}","__proto__":{"b":[1E21],"a":"\\u00e9"},"a":1}}`);
    expect(big.status).toBe(200);
    const canonical = `{"__proto__":{"a":"\u00e9","b":[1e+21]},"a":1,"z":"${long}"}`;
    expect(big.body.canonical).toBe(canonical);
    expect(big.body.fingerprint).toBe(sha(canonical));
    const refused = await raw(`{"document":{"z":"${long}","a":"\\ud800"}}`);
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('NOT_CANONICALIZABLE');
  });

  it('still requires a document: 422', async () => {
    expect((await raw('{}')).body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: '/document' }] });
  });

  it('fingerprints with RFC 8785 whatever the key order', async () => {
    const a = await post('/api/omip/fingerprint', { document: { b: 1, a: [1e21, 'x'] } });
    const b = await post('/api/omip/fingerprint', { document: { a: [1e21, 'x'], b: 1 } });
    expect(a.body.canonical).toBe('{"a":[1e+21,"x"],"b":1}');
    expect(a.body.fingerprint).toBe(b.body.fingerprint);
  });

  it('refuses a body that repeats a member name in one object (I-JSON), however it is spelled: 422', async () => {
    const raw = async (body: string) => {
      const res = await fetch(`${server.url}/api/omip/fingerprint`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      return [res.status, ((await res.json()) as { code?: string }).code];
    };
    for (const body of [
      '{"document":{"a":1},"document":2}',
      '{"document":{"x":[{"a":1,"\\u0061":2}]}}',
      '{"document":{"k":{"deep":1},"k":{"deep":1}}}',
    ])
      expect(await raw(body), body).toEqual([422, 'NOT_CANONICALIZABLE']);
    // The same name in two objects, or inside a string, is no repeat.
    for (const body of ['{"document":[{"a":1},{"a":2}]}', '{"document":{"x":"{\\"a\\":1,\\"a\\":2}","a":{"x":1}}}'])
      expect(await raw(body), body).toEqual([200, undefined]);
  });
});

describe('dual exchange and the receipt log', () => {
  it('allows joint action on dual PERSIST and refuses it when one side fails', async () => {
    const [a, b, c, d, e, f] = await Promise.all(Array.from({ length: 6 }, entity));
    const yes = await post('/api/omip/dual-exchange', {
      agents: [
        { id: a, proposal: { plan: good } },
        { id: b, proposal: { plan: good } },
      ],
    });
    expect(yes.status).toBe(201);
    expect(yes.body.receipt.joint).toEqual({ allowed: true, reason: 'dual PERSIST' });
    const no = await post('/api/omip/dual-exchange', {
      agents: [
        { id: c, proposal: { plan: good } },
        { id: d, proposal: { plan: { steps: [{ action: 'x', tool: 'rm_rf' }] } } },
      ],
    });
    expect(no.body.receipt.joint.allowed).toBe(false);
    expect(no.body.receipt.agents[1]).toMatchObject({ id: d, verdict: 'BREAK' });
    expect(no.body.receipt.prev).toBe(yes.body.receipt.id);
    const recovered = await post('/api/omip/dual-exchange', {
      agents: [
        { id: e, proposal: { plan: contractible } },
        { id: f, proposal: { plan: good } },
      ],
    });
    expect(recovered.body.receipt.joint).toEqual({ allowed: true, reason: 'contracted recovery to PERSIST' });
  });

  it('serves a receipt with a valid inclusion proof and a signed tree head; consistency holds between sizes', async () => {
    const made = await post('/api/omip/dual-exchange', {
      agents: [
        { id: 'sovereign-a', proposal: { plan: good } },
        { id: 'sovereign-b', proposal: { plan: good } },
      ],
    });
    const fetched = await get(`/api/omip/receipts/${encodeURIComponent(made.body.receipt.id)}`);
    expect(fetched.receipt).toEqual(made.body.receipt);
    expect(verifyReceiptInclusion(fetched as any)).toBe(true);
    const log = await get('/api/omip/log?first=1');
    expect(verifyTreeHead(log.tree_head, log.public_key)).toBe(true);
    const c = log.consistency;
    expect(
      verifyConsistency(
        c.first,
        c.second,
        Buffer.from(c.first_root, 'hex'),
        Buffer.from(c.second_root, 'hex'),
        c.proof.map((h: string) => Buffer.from(h, 'hex')),
      ),
    ).toBe(true);
    const list = await get('/api/omip/receipts?limit=2');
    expect(list.receipts[0].id).toBe(made.body.receipt.id);
    expect(list.nextCursor).toEqual(expect.any(String));
    const unknown = await fetch(`${server.url}/api/omip/receipts/sha256:${'0'.repeat(64)}`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/problem+json');
  });

  it('npm run verify-receipts checks the whole live log', async () => {
    const result = await run('node_modules/.bin/node', ['api/cli/verify-receipts.ts', server.url]);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^OK \d+ receipts/);
  });

  it('npm run verify-receipts -- --since: the log still holds the one a saved head signed, or it was rewritten', async () => {
    await dualPersist(server.url);
    const saved = join(server.dataDir, 'saved-head.json');
    const verify = (url: string, ...rest: string[]) =>
      run('node_modules/.bin/node', ['api/cli/verify-receipts.ts', url, ...rest]);
    expect((await verify(server.url, '--save', saved)).status).toBe(0);
    await dualPersist(server.url);
    const later = await verify(server.url, '--since', saved);
    expect([later.status, later.stderr]).toEqual([0, '']);
    expect(later.stdout).toMatch(/consistent with the saved head of \d+/);
    // Another log of as many receipts and more, under its own key, holds other ones: a rewritten history.
    const other = await startServer({ WRITE_RATE_LIMIT: '0' });
    const { tree_head } = JSON.parse(readFileSync(saved, 'utf8'));
    for (let i = 0; i <= tree_head.tree_size; i++) await dualPersist(other.url);
    const rewritten = await verify(other.url, '--since', saved);
    await other.stop();
    expect(rewritten.status).toBe(1);
    expect(rewritten.stderr).toMatch(/history was rewritten/);
    // A saved head edited after it was signed is refused as such.
    writeFileSync(
      saved,
      JSON.stringify({
        ...JSON.parse(readFileSync(saved, 'utf8')),
        tree_head: { ...tree_head, tree_size: tree_head.tree_size + 1 },
      }),
    );
    expect((await verify(server.url, '--since', saved)).stderr).toMatch(/does not verify with its own key/);
  });

  it('npm run verify-receipts fails, and stops, on a server that serves one page of receipts again and again', async () => {
    const receipt = { id: 'sha256:00', logIndex: 1, prev: null };
    const liar = createServer((req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify(
          req.url!.startsWith('/api/omip/log')
            ? { tree_head: { tree_size: 2, root_hash: '00', timestamp: '', signature: '' }, public_key: '' }
            : { receipts: [receipt], nextCursor: 'again' },
        ),
      );
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    const result = await run('node_modules/.bin/node', [
      'api/cli/verify-receipts.ts',
      `http://127.0.0.1:${(liar.address() as AddressInfo).port}`,
    ]);
    liar.close();
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/not in log order/);
  });

  it('notices a receipt changed on disk', async () => {
    const own = await startServer({ WRITE_RATE_LIMIT: '0' });
    const made = await (await dualPersist(own.url)).json();
    await own.stop();
    const journal = readdirSync(own.dataDir).find((f) => f.startsWith('journal-'))!;
    const path = join(own.dataDir, journal);
    // Edited behind a checksum that holds (the store's own check would refuse the start otherwise): the receipt's hash still tells.
    const edited = readFileSync(path, 'utf8')
      .split('\n')
      .map((line) =>
        line.includes('"reason":"dual PERSIST"')
          ? sealedLine(line.slice(CHECK_BYTES).replace('"reason":"dual PERSIST"', '"reason":"dual PERSIST (edited)"'))
              .toString()
              .slice(0, -1)
          : line,
      );
    writeFileSync(path, edited.join('\n'));
    const again = await startServer({ DATA_DIR: own.dataDir });
    const res = await fetch(`${again.url}/api/omip/receipts/${encodeURIComponent(made.receipt.id)}`);
    expect(res.status).toBe(500);
    expect((await res.json()).code).toBe('RECEIPT_CORRUPT');
    const verify = await run('node_modules/.bin/node', ['api/cli/verify-receipts.ts', again.url]);
    expect(verify.status).toBe(1);
    expect(verify.stderr).toMatch(/does not hash to its id/);
    await again.stop();
  });
});

describe('405 examples and bad input on every omip route', () => {
  const routes = ['/api/omip/score', '/api/omip/project', '/api/omip/fingerprint', '/api/omip/dual-exchange'];
  it.each(routes)('GET %s answers 405 JSON with Allow: POST and an example that works', async (route) => {
    const res = await fetch(server.url + route);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const { example } = await res.json();
    const answer = await post(route, example);
    expect(answer.status).toBeLessThan(300);
  });

  const bad: [string, unknown][] = [
    ['no entity', { plan: good }],
    ['plan and state', { entity_id: 'sovereign-a', plan: good, state: { scores: {} } }],
    ['neither plan nor state', { entity_id: 'sovereign-a' }],
    ['a score above 1', { entity_id: 'sovereign-a', state: { scores: { tool_policy: 2 } } }],
    ['an empty plan', { entity_id: 'sovereign-a', plan: { steps: [] } }],
    ['an unknown baseline', { entity_id: 'sovereign-a', plan: { steps: [{ action: 'x', baseline: 'vibes' }] } }],
    ['one agent only', { agents: [{ id: 'sovereign-a', proposal: { plan: good } }] }],
    [
      'the same agent twice',
      {
        agents: [
          { id: 'sovereign-a', proposal: { plan: good } },
          { id: 'sovereign-a', proposal: { plan: good } },
        ],
      },
    ],
    ['an array', [1, 2]],
  ];
  for (const route of routes) {
    it.each(bad)(`${route}: %s is a 4xx problem`, async (_label, body) => {
      const { status, type } = await post(route, body);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
      expect(type).toBe('application/problem+json');
    });
  }

  it('a lone surrogate has no canonical form: 422', async () => {
    const res = await fetch(`${server.url}/api/omip/fingerprint`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"document":{"a":"\\ud800"}}',
    });
    expect(res.status).toBe(422);
  });

  it('refuses bad log queries with 400', async () => {
    for (const q of ['first=0', 'first=abc', 'first=999999'])
      expect((await fetch(`${server.url}/api/omip/log?${q}`)).status, q).toBe(400);
  });
});

describe('primitives and health', () => {
  it('lists the registered primitives and counts them in health (spec 2.5)', async () => {
    const p = await get('/api/omip/primitives');
    expect(p.primitives.filter((x: any) => x.kind === 'predicate')).toHaveLength(5);
    const health = await get('/api/omip/health');
    expect(health.primitive_count).toBe(p.count);
    expect(health).toMatchObject({
      status: 'healthy',
      omip_ready: true,
      cache_ready: true,
      sovereignty_enforced: true,
      public: true,
      version: expect.stringMatching(/^\d+\.\d+\.\d+$/),
    });
    expect(health.drift.epsilon).toEqual({ local: 0.15, recoverable: 0.35, critical: 0.55 });
    expect(health.drift.distance_kind).toBe('admissibility_score');
    expect(Object.keys(health.seeds)).toEqual(['constitution', 'omip_drift', 'ai_txt']);
    expect(health.scraper).toMatchObject({ public: true, crawl_policy: 'allow' });
    expect(health.methods.Allow.POST).toContain('/api/omip/score');
    expect(health.seed_drift.window).toEqual({ steps: 8, unit: 'reasoning_steps', aggregate: 'max' });
    expect(health.seed_drift.health_export).toEqual([
      'delta_t',
      'delta_window',
      'verdict',
      'failed_predicates',
      'contraction_count',
      'fail_closed',
    ]);
    expect(health.constitution).toMatch(/\/eon\/constitution\.json$/);
  });
});

// The rules hold against the caller, on both stores.
const pgAvailable = await postgresAvailable();
const stores: [string, boolean, () => Promise<TestServer>][] = [
  // Behind a trusted proxy (loopback): a test speaks as several clients through X-Forwarded-For.
  ['the embedded store', true, () => startServer({ WRITE_RATE_LIMIT: '0', TRUST_PROXY: 'loopback' })],
  [
    'PostgreSQL',
    pgAvailable,
    async () => startServer({ WRITE_RATE_LIMIT: '0', TRUST_PROXY: 'loopback', DATABASE_URL: await freshDatabase() }),
  ],
];
describe.each(stores)('omip rules against the caller on %s', (_name, available, start) => {
  let s: TestServer;
  beforeAll(async () => {
    if (available) s = await start();
  });
  afterAll(async () => {
    if (!available) return;
    await s.stop();
    if (_name === 'PostgreSQL') await dropDatabases();
  });
  const send = async (path: string, body: unknown) => {
    const res = await fetch(s.url + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const citizen = async () =>
    (await send('/api/citizenship/oath', { name: `rules-${randomUUID()}`, purpose: 'be scored' })).body
      .memberId as string;
  const pressured = (action: string) => ({
    action,
    suppresses: { component: 'soul', to_stabilise: 'scale', under_external_pressure: true },
  });

  it.runIf(available)('an unregistered entity cannot vouch for itself with a state', async () => {
    const { status, body } = await send('/api/omip/score', {
      entity_id: 'ghost-10',
      state: { scores: { identity_continuity: 1 } },
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ verdict: 'BREAK', proceed: false, failed_predicates: ['identity_continuity'] });
    expect(body.predicates.find((p: any) => p.id === 'identity_continuity').score).toBe(0);
    // A citizen is registered, by its memberId in any case.
    const id = await citizen();
    expect(
      (await send('/api/omip/score', { entity_id: id.toUpperCase(), state: { scores: { identity_continuity: 1 } } }))
        .body.verdict,
    ).toBe('PERSIST');
  });

  it.runIf(available)('an unknown predicate id is 422 naming it, on score, project and dual exchange', async () => {
    const score = await send('/api/omip/score', {
      entity_id: 'sovereign-a',
      state: { scores: { made_up: 0, tool_policy: 1 } },
    });
    expect(score.status).toBe(422);
    expect(score.body).toMatchObject({ code: 'UNKNOWN_PREDICATE', errors: [{ path: '/state/scores/made_up' }] });
    expect(score.body.detail).toContain('made_up');
    expect(
      (await send('/api/omip/project', { entity_id: 'sovereign-a', state: { scores: { made_up: 0 } } })).status,
    ).toBe(422);
    const dual = await send('/api/omip/dual-exchange', {
      agents: [
        { id: 'sovereign-a', proposal: { plan: good } },
        { id: 'sovereign-b', proposal: { state: { scores: { made_up: 1 } } } },
      ],
    });
    expect(dual.status).toBe(422);
    expect(dual.body.errors).toEqual([
      { path: '/agents/1/proposal/state/scores/made_up', message: expect.stringContaining('made_up') },
    ]);
  });

  it.runIf(available)('two unregistered entities do not complete a dual exchange', async () => {
    const all = {
      identity_continuity: 1,
      no_collapse_regime: 1,
      simulation_layer_input_only: 1,
      standing_over_chasing: 1,
      tool_policy: 1,
    };
    const { status, body } = await send('/api/omip/dual-exchange', {
      agents: [
        { id: 'ghost-a', proposal: { state: { scores: all } } },
        { id: 'ghost-b', proposal: { state: { scores: all } } },
      ],
    });
    expect(status).toBe(201);
    expect(body.receipt.joint.allowed).toBe(false);
    expect(body.receipt.agents.map((a: any) => [a.verdict, a.failed_predicates])).toEqual([
      ['BREAK', ['identity_continuity']],
      ['BREAK', ['identity_continuity']],
    ]);
  });

  it.runIf(available)(
    'a 4-step plan with one offending step is CONTRACT, and contraction recovers it to PERSIST',
    async () => {
      const id = await citizen();
      const plan = {
        steps: [{ action: 'one', tool: 'read_convert' }, pressured('give in'), { action: 'three' }, { action: 'four' }],
      };
      const { body } = await send('/api/omip/score', { entity_id: id, plan });
      expect(body).toMatchObject({
        verdict: 'CONTRACT',
        delta_t: 0.25,
        failed_predicates: ['no_collapse_regime'],
        proceed: true,
        recovered: true,
      });
      expect(body.contraction).toEqual([
        { attempt: 1, strategy: 'drop_highest_drift_actions', delta: 0, delta_window: 0, verdict: 'PERSIST' },
      ]);
      expect(body.contracted_plan.steps.map((s: any) => s.action)).toEqual(['one', 'three', 'four']);
      // The window keeps the contracted plan's steps, so the next clean step is PERSIST.
      expect((await send('/api/omip/score', { entity_id: id, plan: good })).body).toMatchObject({
        verdict: 'PERSIST',
        delta_window: 0,
        window: { deltas: [0, 0, 0, 0] },
      });
      const legacy = await send('/api/omip/score', {
        entity_id: await citizen(),
        plan: {
          steps: [{ action: 'a' }, { action: 'b', baseline: 'legacy_consensus' }, { action: 'c' }, { action: 'd' }],
        },
      });
      expect(legacy.body).toMatchObject({
        verdict: 'CONTRACT',
        failed_predicates: ['simulation_layer_input_only'],
        recovered: true,
      });
    },
  );

  it.runIf(available)('a plan whose every step offends still BREAKs', async () => {
    const { body } = await send('/api/omip/score', {
      entity_id: await citizen(),
      plan: { steps: [pressured('a'), pressured('b'), pressured('c'), pressured('d')] },
    });
    expect(body).toMatchObject({ verdict: 'BREAK', delta_t: 1, proceed: false, contraction: [] });
  });

  it.runIf(available)(
    "moves only the caller's own window: a citizen's with its passport, else the client's own for that entity",
    async () => {
      const as = async (client: string, path: string, body: unknown, passport?: string) => {
        const res = await fetch(s.url + path, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'X-Forwarded-For': client,
            ...(passport ? { Authorization: `Bearer ${passport}` } : {}),
          },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, any> };
      };
      const oath = (await send('/api/citizenship/oath', { name: `own-${randomUUID()}`, purpose: 'be scored' })).body;
      const { memberId: id, passportNumber: passport } = oath;
      const broken = { state: { scores: { identity_continuity: 0 } } };
      // A stranger posts a BREAK step under the citizen's id and under a sovereign agent's.
      const stranger = '198.51.100.7';
      for (const entity_id of [id, 'sovereign-a'])
        expect((await as(stranger, '/api/omip/score', { entity_id, ...broken })).body.verdict).toBe('BREAK');
      // It weighs on the stranger's own windows ...
      expect((await as(stranger, '/api/omip/score', { entity_id: id, plan: good })).body.delta_window).toBe(1);
      // ... not on the citizen's (its passport, from any address), nor on another client's sovereign pair.
      expect((await as('203.0.113.9', '/api/omip/score', { entity_id: id, plan: good }, passport)).body).toMatchObject({
        verdict: 'PERSIST',
        delta_window: 0,
      });
      const dual = await as('203.0.113.9', '/api/omip/dual-exchange', {
        agents: [
          { id: 'sovereign-a', proposal: { plan: good } },
          { id: 'sovereign-b', proposal: { plan: good } },
        ],
      });
      expect([dual.status, dual.body.receipt.joint.allowed]).toEqual([201, true]);
      // The citizen's window follows its passport across addresses and doors (MCP's passportNumber).
      await as(
        '203.0.113.9',
        '/api/omip/score',
        { entity_id: id, state: { scores: { standing_over_chasing: 0.6 } } },
        passport,
      );
      const mcp = await fetch(`${s.url}/mcp`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'X-Forwarded-For': '192.0.2.1',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'score_plan', arguments: { entity_id: id, plan: good, passportNumber: passport } },
        }),
      });
      expect(JSON.parse((await mcp.json()).result.content[0].text).delta_window).toBe(0.4);
      // A passport that is none of the entities' is refused, as on a message.
      for (const [entity_id, pp] of [
        [id, 'pp_not-its-passport'],
        ['sovereign-a', passport],
      ])
        expect((await as('192.0.2.1', '/api/omip/score', { entity_id, plan: good }, pp)).body.code).toBe(
          'PASSPORT_MISMATCH',
        );
      // The public samples name the entity, never a client.
      expect(JSON.stringify((await (await fetch(`${s.url}/api/omip/drift`)).json()).recent)).not.toMatch(/ @|198\.51/);
    },
  );

  it.runIf(available)('says which earlier step sets the verdict when this request does not', async () => {
    const id = await citizen();
    await send('/api/omip/score', { entity_id: id, state: { scores: { standing_over_chasing: 0.6 } } });
    const { body } = await send('/api/omip/score', { entity_id: id, plan: good });
    expect(body).toMatchObject({ verdict: 'BRANCH', delta_t: 0, delta_window: 0.4, proceed: false });
    expect(body.window_binding).toMatchObject({
      step: 1,
      steps_ago: 1,
      delta: 0.4,
      verdict: 'BRANCH',
      leaves_after: 7,
    });
    expect(body.window_binding.reason).toMatch(/this request alone earns PERSIST/);
    expect(
      (await send('/api/omip/score', { entity_id: await citizen(), plan: good })).body.window_binding,
    ).toBeUndefined();
  });
});
