import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import type { Logger } from 'pino';
import type { Message } from '../schemas/citizenship.ts';
import { NameTaken, nameKeys } from '../names/name-rule.ts';
import { DurableJSONFile } from './durable-file.ts';
import { StoreUnavailableError } from './errors.ts';
import { Journal, type JournalEntry, type JournalObserver } from './journal.ts';
import { pageLogNewestFirst, pageNewestFirst } from './pages.ts';
import { IDEMPOTENCY_CLAIM_MS, IDEMPOTENCY_TTL_MS, type CitizenRecord, type DriftSample, type DriftWrite, type IdempotencyRecord, type ReceiptEntry, type Store } from './types.ts';

/** Everything the embedded store holds, as the snapshot stores it. */
interface State {
  seq: number;
  citizens: CitizenRecord[];
  messages: Message[];
  idempotency: IdempotencyRecord[];
  windows: Record<string, number[]>;
  drift: { samples: number; contraction_count: number; fail_closed: number; by_verdict: Record<string, number>; recent: DriftSample[] };
  receipts: ReceiptEntry[];
  telemetry: object | null;
}

const emptyDrift = (): State['drift'] => ({ samples: 0, contraction_count: 0, fail_closed: 0, by_verdict: {}, recent: [] });
const emptyState = (): State => ({ seq: 0, citizens: [], messages: [], idempotency: [], windows: {}, drift: emptyDrift(), receipts: [], telemetry: null });
// The drift metrics keep this many recent samples.
const RECENT_SAMPLES = 100;

/** The index entries of a name: both its look-alike keys, each held by one citizen. */
const nameIndex = (name: string): string[] => {
  const keys = nameKeys(name);
  return [`folded:${keys.folded}`, `shaped:${keys.shaped}`];
};

/** In-memory indexes over the state, rebuilt at open. */
class Memory {
  readonly state: State;
  readonly citizenById = new Map<string, CitizenRecord>();
  /** Who holds each name key: the first citizen stored with it (names stored before keys existed may share one). */
  readonly citizenByNameKey = new Map<string, CitizenRecord>();
  readonly idempotency = new Map<string, IdempotencyRecord>();
  readonly receiptById = new Map<string, ReceiptEntry>();
  readonly byClass: Record<string, number> = {};
  readonly feed = { messages: 0, questions: 0, wall: 0, verified: 0 };

  constructor(state: State) {
    // Snapshots written before a field existed lack it.
    this.state = { ...emptyState(), ...state, citizens: [], messages: [], idempotency: [], receipts: [] };
    for (const c of state.citizens) this.apply({ seq: state.seq, op: 'citizen.add', v: c });
    for (const m of state.messages) this.apply({ seq: state.seq, op: 'message.add', v: m });
    for (const r of state.idempotency) this.apply({ seq: state.seq, op: 'idempotency.put', v: r });
    for (const r of state.receipts ?? []) this.apply({ seq: state.seq, op: 'receipt.append', v: r });
  }

  /** Applies one journal entry. Pure bookkeeping: no I/O. */
  apply(entry: JournalEntry): void {
    const s = this.state;
    s.seq = Math.max(s.seq, entry.seq);
    switch (entry.op) {
      // Writes that belong together (a citizen, its shout and its idempotency record): one entry, all or nothing.
      case 'unit': {
        for (const write of entry.v as Write[]) this.apply({ seq: entry.seq, op: write.op, v: write.v });
        return;
      }
      // Journals written before 'unit' existed.
      case 'oath': {
        const { citizen, shout } = entry.v as { citizen: CitizenRecord; shout?: Message };
        this.apply({ seq: entry.seq, op: 'citizen.add', v: citizen });
        if (shout) this.apply({ seq: entry.seq, op: 'message.add', v: shout });
        return;
      }
      case 'citizen.add': {
        const c = entry.v as CitizenRecord;
        if (this.citizenById.has(c.memberId)) return;
        insertSorted(s.citizens, c, (x) => x.memberId);
        this.citizenById.set(c.memberId, c);
        for (const key of nameIndex(c.name)) if (!this.citizenByNameKey.has(key)) this.citizenByNameKey.set(key, c);
        this.byClass[c.class] = (this.byClass[c.class] ?? 0) + 1;
        return;
      }
      case 'message.add': {
        const m = entry.v as Message;
        insertSorted(s.messages, m, (x) => x.id);
        if (m.wall) this.feed.wall++;
        else if (m.kind === 'question') this.feed.questions++;
        else this.feed.messages++;
        if (m.verified) this.feed.verified++;
        return;
      }
      case 'idempotency.put': {
        const r = entry.v as IdempotencyRecord;
        // Kept in the order they were made, so pruning stops at the first record still young.
        this.idempotency.delete(r.keyHash);
        this.idempotency.set(r.keyHash, r);
        return;
      }
      case 'drift.record': {
        const { entityId, appended, keep, sample } = entry.v as { entityId: string; appended: number[]; keep: number; sample: DriftSample };
        const d = s.drift;
        s.windows[entityId] = [...(s.windows[entityId] ?? []), ...appended].slice(-keep);
        d.samples++;
        d.contraction_count += sample.contraction_attempts;
        if (sample.fail_closed) d.fail_closed++;
        d.by_verdict[sample.verdict] = (d.by_verdict[sample.verdict] ?? 0) + 1;
        d.recent = [...d.recent.slice(-(RECENT_SAMPLES - 1)), sample];
        return;
      }
      case 'telemetry.save': {
        s.telemetry = entry.v as object;
        return;
      }
      case 'receipt.append': {
        const r = entry.v as ReceiptEntry;
        if (this.receiptById.has(r.id)) return;
        s.receipts.push(r);
        this.receiptById.set(r.id, r);
        return;
      }
      default:
        throw new Error(`unknown journal operation ${entry.op}`);
    }
  }

  /** The citizen holding one of these name keys, or null. */
  holder(keys: string[]): CitizenRecord | null {
    for (const key of keys) {
      const found = this.citizenByNameKey.get(key);
      if (found) return found;
    }
    return null;
  }

  /** Forgets idempotency records expired at `now`, oldest first; how many went. */
  pruneIdempotency(now: number): number {
    let pruned = 0;
    for (const [keyHash, r] of this.idempotency) {
      if (now - Date.parse(r.createdAt) < IDEMPOTENCY_TTL_MS) break;
      this.idempotency.delete(keyHash);
      pruned++;
    }
    return pruned;
  }

  /**
   * The state as it is now, without expired idempotency records, for a snapshot written while
   * writes go on. Records are never changed once stored, so copying the lists (not the records) and
   * the few objects that change in place is enough to keep it from moving.
   */
  snapshot(now: number): State {
    const s = this.state;
    return {
      seq: s.seq,
      citizens: s.citizens.slice(),
      messages: s.messages.slice(),
      idempotency: [...this.idempotency.values()].filter((r) => now - Date.parse(r.createdAt) < IDEMPOTENCY_TTL_MS),
      windows: { ...s.windows },
      drift: { ...s.drift, by_verdict: { ...s.drift.by_verdict } },
      receipts: s.receipts.slice(),
      telemetry: s.telemetry,
    };
  }
}

/** One write of a unit. */
interface Write {
  op: string;
  v: unknown;
}
const maybe = (op: string, v: unknown): Write[] => (v === undefined ? [] : [{ op, v }]);

// Ids are time-ordered, so an insert is nearly always an append.
function insertSorted<T>(items: T[], item: T, idOf: (x: T) => string): void {
  let i = items.length;
  while (i > 0 && idOf(items[i - 1]!) > idOf(item)) i--;
  items.splice(i, 0, item);
}

export interface EmbeddedStoreOptions {
  dir: string;
  logger: Logger;
  /** Compact the journal into the snapshot after this many entries... */
  compactEvery?: number;
  /** ...or once the journal file is this large; either way, only once the journal is as large as the snapshot. */
  compactBytes?: number;
  /** Told of each durable write and each refused one (metrics). */
  observer?: JournalObserver | undefined;
}

/** Reads and writes against one Memory; `commit` decides what makes a write durable. */
function storeOver(memory: Memory, commit: (op: string, v: unknown) => Promise<void>, close: () => Promise<void>): Store {
  // Writes that belong together go in one journal entry.
  const commitAll = (writes: Write[]) => (writes.length === 1 ? commit(writes[0]!.op, writes[0]!.v) : commit('unit', writes));
  // Receipt appends run one at a time, so each one chains onto the head the previous one left.
  let receiptTail: Promise<unknown> = Promise.resolve();
  // Idempotency-Key claims: when each was taken, by key hash.
  const claims = new Map<string, number>();
  // Name keys of oaths being written (not applied yet), with their names: checked and taken in one
  // synchronous step, so of two oaths racing for one name the second is refused.
  const claimedNames = new Map<string, string>();
  return {
    citizens: {
      add: async (citizen, shout, idempotency) => {
        const keys = nameIndex(citizen.name);
        const held = memory.holder(keys);
        const holder = (held && held.memberId !== citizen.memberId ? held.name : undefined) ?? keys.map((key) => claimedNames.get(key)).find((name) => name !== undefined);
        if (holder !== undefined) throw new NameTaken(citizen.name, holder);
        for (const key of keys) claimedNames.set(key, citizen.name);
        try {
          await commitAll([{ op: 'citizen.add', v: citizen }, ...maybe('message.add', shout), ...maybe('idempotency.put', idempotency)]);
        } finally {
          for (const key of keys) claimedNames.delete(key);
        }
      },
      get: async (memberId) => memory.citizenById.get(memberId) ?? null,
      holding: async (name) => memory.holder(nameIndex(name)),
      list: async (query) => pageNewestFirst(memory.state.citizens, (c) => c.memberId, query),
      stats: async () => ({ total: memory.state.citizens.length, byClass: { ...memory.byClass } }),
    },
    feed: {
      add: (message, idempotency) => commitAll([{ op: 'message.add', v: message }, ...maybe('idempotency.put', idempotency)]),
      list: async (query) => pageNewestFirst(memory.state.messages, (m) => m.id, query),
      stats: async () => ({ ...memory.feed }),
    },
    idempotency: {
      get: async (keyHash, now) => {
        const r = memory.idempotency.get(keyHash);
        return r && now.getTime() - Date.parse(r.createdAt) < IDEMPOTENCY_TTL_MS ? r : null;
      },
      put: (record) => commit('idempotency.put', record),
      // Expiry is a matter of time, not of a write: memory forgets, the next snapshot leaves them out.
      prune: async (now) => memory.pruneIdempotency(now.getTime()),
      // One process owns an embedded store, so claims live in its memory and are never journaled:
      // a claim whose run was not acknowledged has nothing to survive a crash for.
      claim: async (keyHash, now) => {
        const since = claims.get(keyHash);
        if (since !== undefined && now.getTime() - since < IDEMPOTENCY_CLAIM_MS) return false;
        claims.set(keyHash, now.getTime());
        return true;
      },
      release: async (keyHash) => void claims.delete(keyHash),
    },
    drift: {
      window: async (entityId) => memory.state.windows[entityId] ?? [],
      record: (entityId, appended, keep, sample, idempotency) =>
        commitAll([{ op: 'drift.record', v: { entityId, appended, keep, sample } satisfies DriftWrite }, ...maybe('idempotency.put', idempotency)]),
      metrics: async (recent) => {
        const d = memory.state.drift;
        return { samples: d.samples, contraction_count: d.contraction_count, fail_closed: d.fail_closed, by_verdict: { ...d.by_verdict }, last: d.recent.at(-1) ?? null, recent: d.recent.slice(-recent).reverse() };
      },
    },
    receipts: {
      append: (build, also = {}) => {
        const run = receiptTail.then(async () => {
          const log = memory.state.receipts;
          const built = build(log.at(-1)?.id ?? null, log.length);
          const entry: ReceiptEntry = { id: built.id, index: log.length, receipt: built.receipt };
          await commitAll([
            ...(also.drift ?? []).map((d) => ({ op: 'drift.record', v: d })),
            { op: 'receipt.append', v: entry },
            ...maybe('idempotency.put', also.idempotency?.(entry)),
          ]);
          return entry;
        });
        receiptTail = run.catch(() => undefined);
        return run;
      },
      get: async (id) => memory.receiptById.get(id) ?? null,
      list: async (query) => pageLogNewestFirst(memory.state.receipts, query),
      idsFrom: async (start) => memory.state.receipts.slice(start).map((r) => r.id),
    },
    telemetry: {
      load: async () => (memory.state.telemetry ? structuredClone(memory.state.telemetry) : null),
      save: (snapshot) => commit('telemetry.save', snapshot),
      others: async () => [],
    },
    close,
  };
}

/** A store that keeps nothing on disk (DATA_DIR=:memory:): for trials and to measure what durability costs. */
export function openMemoryStore(): Store {
  const memory = new Memory(emptyState());
  let seq = 0;
  return storeOver(memory, async (op, v) => memory.apply({ seq: ++seq, op, v }), async () => undefined);
}

/**
 * The embedded default store: state in memory, every write made durable in an append-only journal
 * (group commit, O_DSYNC) before it is acknowledged, and the journal compacted in the background
 * into a lowdb snapshot.
 */
export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<Store> {
  const { dir, logger } = options;
  const compactEvery = options.compactEvery ?? 20_000;
  const compactBytes = options.compactBytes ?? 16 * 1024 * 1024;
  await mkdir(dir, { recursive: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST' && error.code !== 'EROFS') throw error;
  });
  const snapshotPath = join(dir, 'snapshot.json');
  const db = new Low<State>(new DurableJSONFile<State>(snapshotPath), emptyState());
  await db.read();
  // A compaction rewrites the whole register, so it waits until the journal is as large as the
  // snapshot: its cost per write then stays the same however large the register grows, and a start
  // replays at most about as much journal as snapshot.
  const sizeOfSnapshot = () => stat(snapshotPath).then((s) => s.size, () => 0);
  let snapshotBytes = await sizeOfSnapshot();
  const journal = new Journal(dir, options.observer);
  const base = db.data.seq;
  const entries = await journal.replay((file, line) => logger.warn({ file, line }, 'journal: skipped a torn or corrupt line'));
  const memory = new Memory(db.data);
  let replayed = 0;
  for (const entry of entries) {
    if (entry.seq > base) {
      memory.apply(entry);
      replayed++;
    }
  }
  // The journal brings back records that expired while the process was down.
  memory.pruneIdempotency(Date.now());
  let seq = memory.state.seq;
  let sinceSnapshot = replayed;
  try {
    await journal.rotate(seq + 1);
  } catch (error) {
    // Reads still work from what was replayed; each write retries the disk and answers 503 until it can.
    logger.error({ err: error, dir }, 'store opened read-only: the data folder refuses writes');
  }
  logger.info({ citizens: memory.state.citizens.length, messages: memory.state.messages.length, replayed }, 'store opened');

  let compacting: Promise<void> | undefined;
  async function compact(): Promise<void> {
    const upTo = seq;
    const old = await journal.rotate(upTo + 1);
    db.data = memory.snapshot(Date.now());
    await db.write();
    snapshotBytes = await sizeOfSnapshot();
    await journal.remove(old);
    logger.info({ seq: upTo }, 'store compacted');
  }

  /** Makes one entry durable, then applies it. Rejects with 503 when the disk refuses. */
  async function commit(op: string, v: unknown): Promise<void> {
    const entry = { seq: ++seq, op, v };
    try {
      await journal.append(entry);
    } catch (error) {
      logger.error({ err: error, op }, 'store write failed');
      throw new StoreUnavailableError(error);
    }
    memory.apply(entry);
    if ((++sinceSnapshot >= compactEvery || journal.size >= compactBytes) && journal.size >= snapshotBytes && !compacting) {
      sinceSnapshot = 0;
      compacting = compact()
        .catch((error: unknown) => logger.error({ err: error }, 'store compaction failed; the journal still holds every write'))
        .finally(() => (compacting = undefined));
    }
  }

  return storeOver(memory, commit, async () => {
    await compacting;
    await journal.close();
  });
}
