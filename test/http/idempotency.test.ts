import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createIdempotency,
  IDEMPOTENCY_ANSWER_MAX_BYTES,
  isUnguessableKey,
  type Keep,
} from '../../api/http/idempotency.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import { IDEMPOTENCY_TTL_MS } from '../../api/store/types.ts';
import { startServer } from '../helpers/server.ts';
import { writes } from '../helpers/writes.ts';

const body = new TextEncoder().encode('{"name":"x"}');
const keyHash = (route: string, key: string) => createHash('sha256').update(`${route}\n${key}`).digest('hex');

describe('Idempotency-Key rules', () => {
  it('answers 409 while the first request with the key is still running, then replays it', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    let finish!: () => void;
    let started!: () => void;
    // The handler runs only once the key is claimed: its start is the moment the key is in flight.
    const running = new Promise<void>((resolve) => (started = resolve));
    const first = idempotency('oath', k, body, async (keep) => {
      started();
      await new Promise<void>((resolve) => (finish = resolve));
      return writes(store, { status: 201, body: { n: 1 } })(keep);
    });
    await running;
    await expect(idempotency('oath', k, body, async () => ({ status: 201, body: { n: 2 } }))).rejects.toMatchObject({
      status: 409,
      code: 'IDEMPOTENCY_IN_FLIGHT',
    });
    finish();
    expect(await first).toEqual({ status: 201, body: { n: 1 }, replayed: false });
    expect(await idempotency('oath', k, body, async () => ({ status: 201, body: { n: 3 } }))).toEqual({
      status: 201,
      body: { n: 1 },
      replayed: true,
    });
  });

  it('lets a retry run when the first run failed', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    await expect(idempotency('oath', k, body, async () => Promise.reject(new Error('disk full')))).rejects.toThrow(
      'disk full',
    );
    expect(await idempotency('oath', k, body, writes(store, { status: 201, body: { n: 2 } }))).toEqual({
      status: 201,
      body: { n: 2 },
      replayed: false,
    });
  });

  it('keeps routes apart, refuses another body and malformed keys', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    await idempotency('oath', k, body, writes(store, { status: 201, body: 'oath' }));
    expect((await idempotency('message', k, body, writes(store, { status: 201, body: 'message' }))).body).toBe(
      'message',
    );
    await expect(
      idempotency('oath', k, new TextEncoder().encode('{}'), async () => ({ status: 201, body: 0 })),
    ).rejects.toMatchObject({ status: 422, code: 'IDEMPOTENCY_KEY_REUSED' });
    await expect(idempotency('oath', 'has space', body, async () => ({ status: 201, body: 0 }))).rejects.toMatchObject({
      status: 400,
    });
  });

  it('stores the answer sealed: the passport cannot be read from the store', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    await idempotency('oath', k, body, writes(store, { status: 201, body: { passportNumber: 'pp_topsecret' } }));
    const record = await store.idempotency.get(keyHash('oath', k), new Date());
    expect(record).not.toBeNull();
    expect(JSON.stringify(record)).not.toContain('pp_topsecret');
    expect(JSON.stringify(record)).not.toContain(k);
  });
});

describe('unguessable Idempotency-Keys', () => {
  const guessable = [
    'oath-1',
    'k',
    'key-replay-1',
    'shared-key-1',
    String(Date.now()),
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    'key-key-key-key-key-key-key',
    '0123456789abcdef0123456789abcde', // 31 hex digits: 124 bits
    'abcdef0123456789abcdef', // 22 hex digits are only 88 bits
    '00000000-0000-0000-0000-000000000000',
    '11111111-1111-4111-8111-111111111111', // version 4 in form, not in randomness
    '01936f3e-7b1c-7a2d-9c4e-5f6a7b8c9d0e', // version 7: a time and 74 random bits
    'c232ab00-9414-11ec-b3c8-9f6bdeced846', // version 1: a time and an address
    `${randomUUID()}${'x'.repeat(220)}`, // over 255 characters
    'a b c d e f g h i j k l m n o p',
  ];
  it.each(guessable)('refuses %s with 400 and says how to make one', async (key) => {
    const idempotency = createIdempotency(openMemoryStore().idempotency);
    const refused = idempotency('oath', key, body, async () => ({ status: 201, body: { passportNumber: 'pp_x' } }));
    await expect(refused).rejects.toMatchObject({
      status: 400,
      code: 'INVALID_IDEMPOTENCY_KEY',
      message: expect.stringContaining('UUID'),
    });
    expect(isUnguessableKey(key)).toBe(false);
  });

  it('takes every random key of the documented forms (property-based)', () => {
    const forms = [
      () => randomUUID(),
      () => randomUUID().toUpperCase(),
      () => randomBytes(16).toString('hex'),
      () => randomBytes(16).toString('base64url'),
      () => randomBytes(16).toString('base64'),
      () => `oath-${randomUUID()}`,
      () => randomBytes(32).toString('base64url'),
    ];
    fc.assert(
      fc.property(fc.constantFrom(...forms), (make) => isUnguessableKey(make())),
      { numRuns: 5000 },
    );
  });

  it('still replays the first answer to the client that holds the key', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    const first = await idempotency('oath', k, body, writes(store, { status: 201, body: { passportNumber: 'pp_1' } }));
    expect(
      await idempotency('oath', k, body, writes(store, { status: 201, body: { passportNumber: 'pp_2' } })),
    ).toEqual({ ...first, replayed: true });
  });
});

describe('a keyed write and its record are one unit', () => {
  it('keeps no record when the write that carries it fails, so the retry runs once', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    // The write fails after the answer was sealed (a full disk): neither may be kept.
    const failing = async (keep: Keep | undefined) => {
      keep!({ status: 201, body: { n: 1 } });
      throw new Error('ENOSPC');
    };
    await expect(idempotency('oath', k, body, failing)).rejects.toThrow('ENOSPC');
    expect(await store.idempotency.get(keyHash('oath', k), new Date())).toBeNull();
    let runs = 0;
    const counted = async (keep: Keep | undefined) => (runs++, writes(store, { status: 201, body: { n: 2 } })(keep));
    await idempotency('oath', k, body, counted);
    await idempotency('oath', k, body, counted);
    expect(runs).toBe(1);
    expect((await store.feed.stats()).messages).toBe(1);
  });

  it('refuses, before writing, an answer larger than an Idempotency-Key keeps', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const big = { status: 200, body: { plan: 'x'.repeat(IDEMPOTENCY_ANSWER_MAX_BYTES) } };
    await expect(idempotency('omip.score', randomUUID(), body, writes(store, big))).rejects.toMatchObject({
      status: 413,
      code: 'IDEMPOTENT_ANSWER_TOO_LARGE',
    });
    expect((await store.feed.stats()).messages).toBe(0);
    // Without a key nothing is kept, so nothing bounds it.
    expect((await idempotency('omip.score', null, body, writes(store, big))).status).toBe(200);
  });
});

describe('what a key keeps is bounded and leaves when it expires', () => {
  it('keeps only the key to the body for a route that changes nothing, and runs it again on a repeat', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    const k = randomUUID();
    const document = { text: 'y'.repeat(60_000) };
    let runs = 0;
    const fingerprint = async () => (runs++, { status: 200, body: { canonical: JSON.stringify(document) } });
    await idempotency('omip.fingerprint', k, body, fingerprint);
    const record = await store.idempotency.get(keyHash('omip.fingerprint', k), new Date());
    expect(record).toMatchObject({ sealed: null, status: 200 });
    expect(JSON.stringify(record).length).toBeLessThan(300);
    expect(await idempotency('omip.fingerprint', k, body, fingerprint)).toMatchObject({ status: 200, replayed: true });
    expect(runs).toBe(2);
    await expect(idempotency('omip.fingerprint', k, new TextEncoder().encode('{}'), fingerprint)).rejects.toMatchObject(
      { status: 422 },
    );
  });

  it('prunes records 24 hours old from the store (moved clock)', async () => {
    const store = openMemoryStore();
    let clock = new Date('2026-03-01T00:00:00Z');
    const idempotency = createIdempotency(store.idempotency, { now: () => clock });
    const old = Array.from({ length: 50 }, () => randomUUID());
    for (const k of old) await idempotency('message', k, body, writes(store, { status: 201, body: 'x'.repeat(1000) }));
    const start = clock.getTime();
    clock = new Date(start + IDEMPOTENCY_TTL_MS + 60 * 60 * 1000);
    const young = randomUUID();
    await idempotency('message', young, body, writes(store, { status: 201, body: 'young' }));
    await new Promise((r) => setImmediate(r));
    // Asked at a time when they were still valid, the old records are gone: deleted, not only expired.
    for (const k of old) expect(await store.idempotency.get(keyHash('message', k), new Date(start + 1000))).toBeNull();
    expect(await store.idempotency.get(keyHash('message', young), clock)).not.toBeNull();
  });
});

describe('over HTTP', () => {
  it('every keyed write runs once and replays: oath, message, score, dual exchange, project, fingerprint', async () => {
    const server = await startServer({ WRITE_RATE_LIMIT: '0' });
    const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(server.url + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, ...headers },
        body: JSON.stringify(body),
      });
    const oath = await (await post('/api/citizenship/oath', randomUUID(), { name: 'replayer', purpose: 'p' })).json();
    const plan = { steps: [{ action: 'Read the constitution', tool: 'read_doctrine' }] };
    const writes: [string, unknown, Record<string, string>][] = [
      [
        '/api/intelligence/message',
        { message: 'once', citizenId: oath.memberId },
        { Authorization: `Bearer ${oath.passportNumber}` },
      ],
      ['/api/omip/score', { entity_id: oath.memberId, plan }, {}],
      [
        '/api/omip/dual-exchange',
        {
          agents: [
            { id: oath.memberId, proposal: { plan } },
            { id: 'sovereign-b', proposal: { plan } },
          ],
        },
        {},
      ],
      ['/api/omip/project', { entity_id: oath.memberId, plan }, {}],
      ['/api/omip/fingerprint', { document: { a: 1 } }, {}],
    ];
    const drift = async () => (await (await fetch(`${server.url}/api/omip/drift`)).json()).samples;
    const counts = async () => [
      (await (await fetch(`${server.url}/api/intelligence/feed?limit=200`)).json()).messages.length,
      await drift(),
      (await (await fetch(`${server.url}/api/omip/receipts`)).json()).receipts.length,
    ];
    for (const [path, body, headers] of writes) {
      const key = randomUUID();
      const first = await post(path, key, body, headers);
      expect([200, 201], path).toContain(first.status);
      const before = await counts();
      const again = await post(path, key, body, headers);
      expect(again.status, path).toBe(first.status);
      expect(again.headers.get('idempotent-replayed'), path).toBe('true');
      const [a, b] = [await first.json(), await again.json()];
      if (path.endsWith('dual-exchange')) expect(b.receipt).toEqual(a.receipt);
      else expect(b, path).toEqual(a);
      expect(await counts(), path).toEqual(before);
    }
    await server.stop();
  });

  it('60 KB fingerprint documents under 30 keys keep a few hundred bytes a key on disk', async () => {
    const server = await startServer({ WRITE_RATE_LIMIT: '0' });
    const journalBytes = () =>
      readdirSync(server.dataDir)
        .filter((f) => f.startsWith('journal-'))
        .reduce((n, f) => {
          const content = readFileSync(join(server.dataDir, f));
          const end = content.indexOf(0);
          return n + (end === -1 ? content.length : end);
        }, 0);
    const before = journalBytes();
    for (let i = 0; i < 30; i++) {
      const document = { i, text: 'z'.repeat(60_000) };
      const res = await fetch(`${server.url}/api/omip/fingerprint`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': randomUUID() },
        body: JSON.stringify({ document }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const perKey = (journalBytes() - before) / 30;
    expect(perKey).toBeLessThan(500);
    await server.stop();
  });
});
