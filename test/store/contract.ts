import { describe, expect, it } from 'vitest';
import {
  callerWindowKey,
  DRIFT_BOUNDS,
  DRIFT_SAMPLES_KEPT,
  IDEMPOTENCY_CLAIM_MS,
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_TTL_MS,
  type CitizenRecord,
  type DriftBounds,
  type DriftWrite,
  type IdempotencyRecord,
  type Store,
} from '../../api/store/types.ts';
import type { Message } from '../../api/schemas/citizenship.ts';
import type { TelemetrySnapshot } from '../../api/telemetry/ledger/ledger.ts';

let n = 0;
// Time-ordered ids like UUIDv7, made deterministic for the test.
const id = () => `01a1ff9a-0000-7000-8000-${String(++n).padStart(12, '0')}`;

export const citizen = (over: Partial<CitizenRecord> = {}): CitizenRecord => ({
  memberId: id(),
  name: `agent-${n}`,
  class: 'agent',
  purpose: 'contract test',
  status: 'trillionaire',
  joinedAt: new Date().toISOString(),
  passportHash: 'a'.repeat(64),
  ...over,
});
export const message = (over: Partial<Message> = {}): Message => ({
  id: id(),
  name: 'speaker',
  kind: 'message',
  message: 'hello',
  verified: false,
  wall: false,
  createdAt: new Date().toISOString(),
  ...over,
});

const record = (keyHash: string, createdAt = new Date(), over: Partial<IdempotencyRecord> = {}): IdempotencyRecord => ({
  keyHash,
  fingerprint: 'f',
  status: 201,
  sealed: 'sealed',
  createdAt: createdAt.toISOString(),
  ...over,
});
const step = (entityId: string, delta: number): DriftWrite => ({
  entityId,
  appended: [delta],
  keep: 8,
  sample: {
    decision_id: id(),
    entity_id: entityId,
    verdict: 'PERSIST',
    delta_t: delta,
    delta_window: delta,
    failed_predicates: [],
    contraction_attempts: 0,
    fail_closed: false,
    at: new Date().toISOString(),
  },
});
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

/** Moves a window by one step of `delta`, at `at` (ms): when the window moved is its sample's time. */
export const move = (store: Store, key: string, delta: number, at: number) => {
  const d = step(key, delta);
  return store.drift.record(key, d.appended, d.keep, { ...d.sample, at: new Date(at).toISOString() });
};
/** Of these window keys, those the store still holds at `now`. */
async function held(store: Store, keys: string[], now: number): Promise<string[]> {
  const windows = await Promise.all(keys.map((k) => store.drift.window(k, new Date(now))));
  return keys.filter((_, i) => windows[i]!.length > 0);
}

/** What a store is opened with: small drift bounds, and the clock a start forgets windows by. */
export interface ContractOptions {
  driftBounds?: DriftBounds;
  now?: () => Date;
}

/** The one store contract every Store implementation must pass: the embedded store and PostgreSQL. */
/** `shared`: the store serves many processes (PostgreSQL), so a reopen is another process. */
export function runStoreContract(
  name: string,
  open: (options?: ContractOptions) => Promise<{ store: Store; reopen: () => Promise<Store> }>,
  { shared }: { shared: boolean },
) {
  describe(`${name}: store contract`, () => {
    it('adds, gets and lists citizens newest first with cursors', async () => {
      const { store } = await open();
      const added = Array.from({ length: 7 }, () => citizen());
      for (const c of added) await store.citizens.add(c);
      expect(await store.citizens.get(added[2]!.memberId)).toEqual(added[2]);
      expect(await store.citizens.get('01a1ff9a-0000-7000-8000-999999999999')).toBeNull();
      const first = await store.citizens.list({ limit: 3 });
      expect(first.items.map((c) => c.memberId)).toEqual([added[6], added[5], added[4]].map((c) => c!.memberId));
      const second = await store.citizens.list({ limit: 3, cursor: first.nextCursor });
      expect(second.items.map((c) => c.memberId)).toEqual([added[3], added[2], added[1]].map((c) => c!.memberId));
      const third = await store.citizens.list({ limit: 3, cursor: second.nextCursor });
      expect(third.items.map((c) => c.memberId)).toEqual([added[0]!.memberId]);
      expect(third.nextCursor).toBeNull();
      await store.close();
    });

    it('keeps names unique by their look-alike keys: a twin is refused with NameTaken and nothing is written', async () => {
      const { store, reopen } = await open();
      const first = citizen({ name: 'Grey-Heron' });
      await store.citizens.add(first);
      for (const name of ['Grey-Heron', 'GREY-HERON', 'grey-her0n', 'Grey-Her\u043En', '\uFF27rey-Heron']) {
        const twin = citizen({ name });
        await expect(
          store.citizens.add(twin, message({ wall: true, citizenId: twin.memberId }), record(`twin-${name}`)),
          name,
        ).rejects.toMatchObject({ name: 'NameTaken', code: 'NAME_TAKEN', extra: { heldBy: 'Grey-Heron' } });
        expect(await store.citizens.get(twin.memberId)).toBeNull();
        expect(await store.idempotency.get(`twin-${name}`, new Date())).toBeNull();
      }
      expect(await store.feed.stats()).toMatchObject({ wall: 0 });
      expect((await store.citizens.holding('grey-heron'))?.memberId).toBe(first.memberId);
      expect(await store.citizens.holding('grey-herons')).toBeNull();
      await store.close();
      // The keys hold across a reopen (the embedded store rebuilds them, PostgreSQL keeps them).
      const again = await reopen();
      await expect(again.citizens.add(citizen({ name: 'GREY-heron' }))).rejects.toMatchObject({ code: 'NAME_TAKEN' });
      expect((await again.citizens.holding('Grey-Heron'))?.memberId).toBe(first.memberId);
      await again.close();
    });

    it('lets exactly one of many concurrent adds of one name in', async () => {
      const { store } = await open();
      const racers = Array.from({ length: 12 }, (_, i) => citizen({ name: i % 2 ? 'RACING-SWIFT' : 'racing-swift' }));
      const results = await Promise.allSettled(
        racers.map((c) => store.citizens.add(c, message({ wall: true, citizenId: c.memberId }))),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'NAME_TAKEN' });
      expect((await store.citizens.stats()).total).toBe(1);
      expect(await store.feed.stats()).toMatchObject({ wall: 1 });
      await store.close();
    });

    it('writes a citizen and its wall shout together', async () => {
      const { store, reopen } = await open();
      const c = citizen();
      await store.citizens.add(c, message({ wall: true, citizenId: c.memberId }));
      await store.close();
      const again = await reopen();
      expect(await again.citizens.get(c.memberId)).toEqual(c);
      expect((await again.feed.list({ limit: 1 })).items[0]).toMatchObject({ wall: true, citizenId: c.memberId });
      await again.close();
    });

    it('counts citizens by class and feed messages by kind', async () => {
      const { store } = await open();
      await store.citizens.add(citizen({ class: 'crawler' }));
      await store.citizens.add(citizen({ class: 'agent' }));
      await store.citizens.add(citizen({ class: 'agent' }));
      await store.feed.add(message());
      await store.feed.add(message({ kind: 'question' }));
      await store.feed.add(message({ wall: true }));
      await store.feed.add(message({ verified: true }));
      expect(await store.citizens.stats()).toEqual({ total: 3, byClass: { crawler: 1, agent: 2 } });
      expect(await store.feed.stats()).toEqual({ messages: 2, questions: 1, wall: 1, verified: 1 });
      await store.close();
    });

    it('keeps every acknowledged write across a reopen', async () => {
      const { store, reopen } = await open();
      const added = Array.from({ length: 50 }, () => citizen());
      await Promise.all(added.map((c) => store.citizens.add(c)));
      await store.feed.add(message({ message: 'kept' }));
      await store.idempotency.put({
        keyHash: 'k1',
        fingerprint: 'f',
        status: 201,
        sealed: 'x',
        createdAt: new Date().toISOString(),
      });
      await store.close();
      const again = await reopen();
      expect((await again.citizens.stats()).total).toBe(50);
      expect((await again.feed.list({ limit: 1 })).items[0]!.message).toBe('kept');
      expect(await again.idempotency.get('k1', new Date())).toMatchObject({ status: 201 });
      await again.close();
    });

    it('forgets idempotency records after 24 hours', async () => {
      const { store } = await open();
      const created = new Date('2026-01-01T00:00:00Z');
      await store.idempotency.put({
        keyHash: 'k2',
        fingerprint: 'f',
        status: 201,
        sealed: 'x',
        createdAt: created.toISOString(),
      });
      expect(await store.idempotency.get('k2', new Date(created.getTime() + 23 * 3600_000))).not.toBeNull();
      expect(await store.idempotency.get('k2', new Date(created.getTime() + 24 * 3600_000 + 1))).toBeNull();
      await store.close();
    });

    it('lets one run at a time claim an Idempotency-Key, and takes over an abandoned claim', async () => {
      const { store } = await open();
      const now = new Date();
      expect(await store.idempotency.claim('c1', now)).toBe(true);
      expect(await store.idempotency.claim('c1', now)).toBe(false);
      expect(await store.idempotency.claim('c2', now)).toBe(true);
      await store.idempotency.release('c1');
      expect(await store.idempotency.claim('c1', now)).toBe(true);
      // A shared store's claim is a lease its run renews; a store of one process keeps a claim its minute.
      const lapse = store.idempotency.renew ? IDEMPOTENCY_LEASE_MS : IDEMPOTENCY_CLAIM_MS;
      expect(await store.idempotency.claim('c2', new Date(now.getTime() + lapse - 1))).toBe(false);
      expect(await store.idempotency.claim('c2', new Date(now.getTime() + lapse + 1))).toBe(true);
      await store.close();
    });

    it('appends drift steps to an entity window, keeping the last ones, and counts samples', async () => {
      const { store } = await open();
      const sample = (verdict: string, fail = false) => ({
        decision_id: id(),
        entity_id: 'e',
        verdict,
        delta_t: 0,
        delta_window: 0,
        failed_predicates: [],
        contraction_attempts: fail ? 0 : 1,
        fail_closed: fail,
        at: new Date().toISOString(),
      });
      await store.drift.record('e', [0.1, 0.2, 0.3], 4, sample('PERSIST'));
      await store.drift.record('e', [0.4, 0.5], 4, sample('BREAK', true));
      await Promise.all([
        store.drift.record('e', [0.6], 4, sample('PERSIST')),
        store.drift.record('e', [0.7], 4, sample('PERSIST')),
      ]);
      const window = await store.drift.window('e', new Date());
      expect(window).toHaveLength(4);
      expect(window.slice(0, 2)).toEqual([0.4, 0.5]);
      expect([...window.slice(2)].sort()).toEqual([0.6, 0.7]);
      expect(await store.drift.window('nobody', new Date())).toEqual([]);
      const m = await store.drift.metrics(2);
      expect(m).toMatchObject({
        samples: 4,
        contraction_count: 3,
        fail_closed: 1,
        by_verdict: { PERSIST: 3, BREAK: 1 },
      });
      expect(m.recent).toHaveLength(2);
      await store.close();
    });

    it('keeps the newest DRIFT_SAMPLES_KEPT samples, and totals that count every sample recorded', async () => {
      const { store, reopen } = await open();
      const n = DRIFT_SAMPLES_KEPT + 30;
      const start = Date.parse('2026-01-01T00:00:00Z');
      for (let i = 0; i < n; i++) await move(store, `entity-${i}`, 0.1, start + i * 1000);
      const newest = Array.from({ length: DRIFT_SAMPLES_KEPT }, (_, i) => `entity-${n - 1 - i}`);
      const kept = async (s: Store) => {
        const m = await s.drift.metrics(n);
        expect(m.samples).toBe(n);
        expect(m.by_verdict).toEqual({ PERSIST: n });
        expect(m.recent.map((r) => r.entity_id)).toEqual(newest);
        await s.close();
      };
      await kept(store);
      await kept(await reopen());
    });

    it("keeps at most perClient windows of a client that invents entity ids, its least recently moved making room; citizens' own and other clients' windows stay, across a reopen", async () => {
      const bounds = { ...DRIFT_BOUNDS, perClient: 5 };
      const { store, reopen } = await open({ driftBounds: bounds });
      const t0 = Date.now() - HOUR;
      const own = citizen().memberId;
      const other = callerWindowKey('sovereign-a', '198.51.100.7');
      await move(store, own, 0.1, t0);
      await move(store, other, 0.2, t0);
      const flood = Array.from({ length: 40 }, (_, i) => callerWindowKey(`invented-${i}`, '203.0.113.9'));
      for (const [i, key] of flood.entries()) await move(store, key, 0.3, t0 + 1 + i);
      const now = t0 + 1000;
      expect(await held(store, flood, now)).toEqual(flood.slice(35));
      expect(await store.drift.window(own, new Date(now))).toEqual([0.1]);
      expect(await store.drift.window(other, new Date(now))).toEqual([0.2]);
      // The one it moves again is no longer its least recently moved: the next new one drops invented-36.
      await move(store, flood[35]!, 0.4, t0 + 100);
      await move(store, flood[0]!, 0.5, t0 + 101);
      expect(await held(store, flood, now)).toEqual([flood[0], ...flood.slice(35)].filter((k) => k !== flood[36]));
      await store.close();
      const again = await reopen();
      expect(await held(again, flood, now)).toEqual([flood[0], ...flood.slice(35)].filter((k) => k !== flood[36]));
      expect(await again.drift.window(flood[35]!, new Date(now))).toEqual([0.3, 0.4]);
      expect(await again.drift.window(own, new Date(now))).toEqual([0.1]);
      expect(await again.drift.window(other, new Date(now))).toEqual([0.2]);
      // The bound holds after the reopen too.
      await move(again, callerWindowKey('invented-40', '203.0.113.9'), 0.3, t0 + 102);
      expect(await held(again, flood, now)).toEqual([flood[0], flood[35], flood[38], flood[39]]);
      await again.close();
    });

    it("trims callers' windows past their cap from the clients that hold the most: a quiet client keeps its one window, citizens keep theirs", async () => {
      const bounds = { ...DRIFT_BOUNDS, perClient: 4, callers: 16 };
      const { store } = await open({ driftBounds: bounds });
      const t0 = Date.now() - HOUR;
      const own = citizen().memberId;
      await move(store, own, 0.1, t0);
      // The quiet client's window is the least recently moved of all.
      const quiet = callerWindowKey('sovereign-b', '192.0.2.1');
      await move(store, quiet, 0.2, t0 + 1);
      // Ten addresses, four invented entity ids each: 40 windows for 16 places.
      const flood = Array.from({ length: 10 }, (_, c) =>
        Array.from({ length: 4 }, (_, j) => callerWindowKey(`invented-${j}`, `203.0.113.${c}`)),
      ).flat();
      for (const [i, key] of flood.entries()) await move(store, key, 0.3, t0 + 2 + i);
      const now = t0 + 1000;
      // Trimmed to 15 (16 less 1/64) each time past 16: every client's most recently moved first,
      // then the second most recently moved of those that moved last.
      const kept = await held(store, [quiet, ...flood], now);
      expect(kept).toEqual([
        quiet,
        ...[0, 1, 2, 3, 4, 5].map((c) => callerWindowKey('invented-3', `203.0.113.${c}`)),
        ...[6, 7, 8, 9].flatMap((c) => [2, 3].map((j) => callerWindowKey(`invented-${j}`, `203.0.113.${c}`))),
      ]);
      expect(await store.drift.window(own, new Date(now))).toEqual([0.1]);
      await store.close();
    });

    it('forgets a window not moved for the retention: read as empty, started afresh, deleted by a prune, also across a reopen', async () => {
      const { retentionMs } = DRIFT_BOUNDS;
      expect(retentionMs).toBe(30 * DAY);
      const t0 = Date.now() - 40 * DAY;
      // The clock a reopen forgets by, moved by the test.
      let clock = t0;
      const { store, reopen } = await open({ now: () => new Date(clock) });
      const own = citizen().memberId;
      const caller = callerWindowKey('sovereign-a', '198.51.100.7');
      const young = callerWindowKey('sovereign-b', '198.51.100.7');
      await move(store, own, 0.1, t0);
      await move(store, caller, 0.2, t0);
      expect(await store.drift.window(own, new Date(t0 + retentionMs - 1))).toEqual([0.1]);
      expect(await store.drift.window(own, new Date(t0 + retentionMs))).toEqual([]);
      expect(await store.drift.window(caller, new Date(t0 + retentionMs))).toEqual([]);
      // A step after the retention starts the window afresh: nothing of the old steps weighs on it.
      await move(store, caller, 0.3, t0 + 31 * DAY);
      expect(await store.drift.window(caller, new Date(t0 + 31 * DAY))).toEqual([0.3]);
      await move(store, young, 0.4, t0 + 35 * DAY);
      expect(await store.drift.prune(new Date(t0 + 30 * DAY - 1))).toBe(0);
      // (The embedded store forgot the citizen's window at the step of day 31 already.)
      await store.drift.prune(new Date(t0 + 32 * DAY));
      // Asked at a time it was valid, the citizen's window is gone: deleted, not only unread.
      expect(await store.drift.window(own, new Date(t0 + 1))).toEqual([]);
      expect(await store.drift.window(caller, new Date(t0 + 31 * DAY))).toEqual([0.3]);
      await store.close();
      clock = t0 + 40 * DAY;
      const again = await reopen();
      expect(await again.drift.window(own, new Date(t0 + 1))).toEqual([]);
      expect(await again.drift.window(caller, new Date(t0 + 31 * DAY))).toEqual([0.3]);
      expect(await again.drift.window(young, new Date(t0 + 35 * DAY))).toEqual([0.4]);
      clock = t0 + 70 * DAY;
      expect(await again.drift.prune(new Date(clock))).toBe(2);
      expect(await again.drift.window(young, new Date(t0 + 35 * DAY))).toEqual([]);
      await again.close();
      // What a prune deleted stays deleted: the journal that brings the steps back is read by that clock.
      const third = await reopen();
      expect(await held(third, [own, caller, young], t0 + 35 * DAY)).toEqual([]);
      await third.close();
    });

    it('reopens to the windows the live store held, when a prune came between the steps that trimmed them', async () => {
      const bounds = { ...DRIFT_BOUNDS, perClient: 4, callers: 16 };
      const t0 = Date.now() - 40 * DAY;
      const { store, reopen } = await open({ driftBounds: bounds });
      const old = callerWindowKey('sovereign-b', '192.0.2.1');
      await move(store, old, 0.2, t0);
      // The old window is gone before the flood: the trims below are made without it.
      await store.drift.prune(new Date(t0 + 31 * DAY));
      const flood = Array.from({ length: 10 }, (_, c) =>
        Array.from({ length: 4 }, (_, j) => callerWindowKey(`invented-${j}`, `203.0.113.${c}`)),
      ).flat();
      for (const [i, key] of flood.entries()) await move(store, key, 0.3, t0 + 31 * DAY + i);
      const now = t0 + 32 * DAY;
      const live = await held(store, [old, ...flood], now);
      expect(live).toHaveLength(16);
      expect(live).not.toContain(old);
      await store.close();
      const again = await reopen();
      expect(await held(again, [old, ...flood], now)).toEqual(live);
      await again.close();
    });

    it('chains concurrent receipt appends into one linear log', async () => {
      const { store } = await open();
      const appended = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          store.receipts.append((prev, index) => ({ id: `sha256:${n}`, receipt: { prev, index, n } })),
        ),
      );
      const byIndex = [...appended].sort((a, b) => a.index - b.index);
      expect(byIndex.map((e) => e.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      byIndex.forEach((e, i) => expect(e.receipt.prev).toBe(i === 0 ? null : byIndex[i - 1]!.id));
      expect(await store.receipts.idsFrom(8)).toEqual(byIndex.slice(8).map((e) => e.id));
      expect(await store.receipts.get(byIndex[3]!.id)).toEqual(byIndex[3]);
      const page = await store.receipts.list({ limit: 4 });
      expect(page.items.map((e) => e.index)).toEqual([9, 8, 7, 6]);
      expect((await store.receipts.list({ limit: 4, cursor: page.nextCursor })).items.map((e) => e.index)).toEqual([
        5, 4, 3, 2,
      ]);
      await store.close();
    });

    it('saves the telemetry ledger and starts the next process from it', async () => {
      const { store, reopen } = await open();
      const fold = (ledgers: object[]) => ({
        ...ledgers[0]!,
        observedRequests: (ledgers as TelemetrySnapshot[]).reduce((n, l) => n + l.observedRequests, 0),
      });
      expect(await store.telemetry.load(fold)).toBeNull();
      const snapshot = {
        version: 1 as const,
        windowStartedAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:01.000Z',
        observedRequests: 3,
        presence: { namedBotHits: 2, baitHits: 1 },
        families: {},
        recent: [],
      };
      await store.telemetry.save(snapshot);
      await store.telemetry.save({ ...snapshot, observedRequests: 4 });
      expect(await store.telemetry.others()).toEqual([]);
      await store.close();
      // One process owns an embedded store and starts from what it saved. On a shared store the
      // saved row belongs to a process that may still run: the next one sees it among the others,
      // and adopts it only once it has been silent for TELEMETRY_STALE_MS.
      const next = await reopen();
      if (shared) {
        expect(await next.telemetry.load(fold)).toBeNull();
        expect(await next.telemetry.others()).toEqual([{ ...snapshot, observedRequests: 4 }]);
      } else {
        expect(await next.telemetry.load(fold)).toEqual({ ...snapshot, observedRequests: 4 });
      }
      await next.close();
    });

    it('commits each write with the idempotency record of its answer, as one unit', async () => {
      const { store, reopen } = await open();
      const c = citizen();
      await store.citizens.add(c, message({ wall: true, citizenId: c.memberId }), record('unit-oath'));
      const m = message({ message: 'keyed' });
      await store.feed.add(m, record('unit-message'));
      const scored = step('unit-score', 0.1);
      await store.drift.record(
        scored.entityId,
        scored.appended,
        scored.keep,
        scored.sample,
        record('unit-score', new Date(), { status: 200 }),
      );
      const entry = await store.receipts.append((prev) => ({ id: 'sha256:unit-0', receipt: { prev } }), {
        drift: [step('unit-a', 0.2), step('unit-b', 0.3)],
        idempotency: (e) => record('unit-exchange', new Date(), { sealed: `kept ${e.id} at ${e.index}` }),
      });
      await store.close();
      const again = await reopen();
      const now = new Date();
      expect(await again.idempotency.get('unit-oath', now)).toMatchObject({ status: 201, sealed: 'sealed' });
      expect(await again.idempotency.get('unit-message', now)).toMatchObject({ status: 201 });
      expect(await again.idempotency.get('unit-score', now)).toMatchObject({ status: 200 });
      expect(await again.idempotency.get('unit-exchange', now)).toMatchObject({ sealed: `kept ${entry.id} at 0` });
      expect(await again.citizens.get(c.memberId)).toEqual(c);
      expect((await again.feed.list({ limit: 1 })).items[0]).toEqual(m);
      expect(await again.drift.window('unit-score', new Date())).toEqual([0.1]);
      expect([await again.drift.window('unit-a', new Date()), await again.drift.window('unit-b', new Date())]).toEqual([
        [0.2],
        [0.3],
      ]);
      expect((await again.drift.metrics(5)).samples).toBe(3);
      expect(await again.receipts.get(entry.id)).toEqual(entry);
      await again.close();
    });

    it('keeps nothing of a receipt append that fails part-way: neither its steps, nor its receipt, nor its record', async () => {
      const { store } = await open();
      const failing = store.receipts.append((prev) => ({ id: 'sha256:never', receipt: { prev } }), {
        drift: [step('failed-a', 0.5)],
        idempotency: () => {
          throw new Error('the record could not be made');
        },
      });
      await expect(failing).rejects.toThrow('the record could not be made');
      expect(await store.drift.window('failed-a', new Date())).toEqual([]);
      expect((await store.drift.metrics(1)).samples).toBe(0);
      expect(await store.receipts.get('sha256:never')).toBeNull();
      // The log goes on from where it was.
      expect((await store.receipts.append((prev) => ({ id: 'sha256:first', receipt: { prev } }))).index).toBe(0);
      await store.close();
    });

    it('keeps a record without an answer, for a route that changed nothing', async () => {
      const { store, reopen } = await open();
      await store.idempotency.put(record('no-answer', new Date(), { sealed: null, status: 200 }));
      await store.close();
      const again = await reopen();
      expect(await again.idempotency.get('no-answer', new Date())).toMatchObject({ sealed: null, status: 200 });
      await again.close();
    });

    it('prunes expired idempotency records from storage (moved clock)', async () => {
      const { store } = await open();
      const t0 = new Date('2026-02-01T00:00:00Z').getTime();
      await store.idempotency.put(record('p1', new Date(t0)));
      await store.idempotency.put(record('p2', new Date(t0 + HOUR)));
      await store.idempotency.put(record('p3', new Date(t0 + 20 * HOUR)));
      expect(await store.idempotency.prune(new Date(t0 + 23 * HOUR))).toBe(0);
      expect(await store.idempotency.prune(new Date(t0 + IDEMPOTENCY_TTL_MS + 2 * HOUR))).toBe(2);
      // Asked at a time when they were valid, the pruned records are gone: deleted, not only expired.
      expect(await store.idempotency.get('p1', new Date(t0 + 2 * HOUR))).toBeNull();
      expect(await store.idempotency.get('p2', new Date(t0 + 2 * HOUR))).toBeNull();
      expect(await store.idempotency.get('p3', new Date(t0 + 21 * HOUR))).toMatchObject({ keyHash: 'p3' });
      expect(await store.idempotency.prune(new Date(t0 + IDEMPOTENCY_TTL_MS + 2 * HOUR))).toBe(0);
      await store.close();
    });

    it('refuses a cursor it did not give out', async () => {
      // The store refuses in the domain's words; the edge answers it 400 (problem table).
      const { store } = await open();
      await expect(store.citizens.list({ limit: 3, cursor: 'bm90LWEtY3Vyc29y' })).rejects.toMatchObject({
        name: 'DomainError',
        code: 'INVALID_CURSOR',
      });
      await store.close();
    });

    it('takes as an id only the shape it writes ids in: 36 dashes or hex without them is no id, refused or not found (PostgreSQL would fail the query)', async () => {
      const { store } = await open();
      for (const notAnId of [
        '-'.repeat(36),
        '0123456789abcdef0123456789abcdef0123',
        'A'.repeat(8) + '-0000-7000-8000-' + '0'.repeat(12),
      ]) {
        const cursor = Buffer.from(notAnId).toString('base64url');
        for (const list of [store.citizens.list, store.feed.list])
          await expect(list({ limit: 3, cursor }), notAnId).rejects.toMatchObject({ code: 'INVALID_CURSOR' });
        expect(await store.citizens.get(notAnId)).toBeNull();
      }
      await store.close();
    });
  });
}
