import { chmod, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { Low } from 'lowdb';
import type { Logger } from 'pino';
import type { Message } from '../../schemas/citizenship.ts';
import { NameTaken, nameKeys, nameKeysStamp } from '../../names/name-rule.ts';
import type { ChunkOptions } from './durable-file.ts';
import { StoreFullError, StoreUnavailableError } from '../errors.ts';
import { Journal, type Damage, type JournalEntry, type JournalObserver, type JournalScan } from './journal.ts';
import { entryFault } from './journal-entry.ts';
import { StartupError } from '../../startup-error.ts';
import { pageLogNewestFirst, pageNewestFirst } from '../pages.ts';
import {
  citizenClassAt,
  citizenNameAt,
  KeyIndex,
  keyHash,
  messageFlagsAt,
  M_QUESTION,
  M_VERIFIED,
  M_WALL,
  type RecordList,
} from './codec.ts';
import { IdempotencyRecords } from './idempotency-records.ts';
import { DriftWindows } from './drift-windows.ts';
import {
  emptyData,
  LEGACY_SNAPSHOT_FILE,
  SNAPSHOT_FILE,
  SnapshotFile,
  type Drift,
  type LoadedData,
  type SnapshotData,
} from './snapshot.ts';
import {
  DRIFT_BOUNDS,
  DRIFT_SAMPLES_KEPT,
  IDEMPOTENCY_CLAIM_MS,
  IDEMPOTENCY_TTL_MS,
  type CitizenRecord,
  type DriftBounds,
  type DriftSample,
  type DriftWrite,
  type IdempotencyRecord,
  type ReceiptEntry,
  type Store,
} from '../types.ts';

// What a record held as an object costs beyond its text (object, map entry, pointers): an estimate
// for the ceiling (100,000 idempotency records in a Map took 166 bytes each beyond their text).
const OBJECT_OVERHEAD_BYTES = 200;

/** The index entries of a name: both its look-alike keys, each held by one citizen. */
const nameIndex = (name: string): string[] => {
  const keys = nameKeys(name);
  return [`folded:${keys.folded}`, `shaped:${keys.shaped}`];
};
/**
 * The keys an oath's check computed, by its citizen object, for the write that then applies it: a
 * name's keys cost about 3 µs, and were computed twice an oath. Replayed entries are new objects,
 * and compute them.
 */
const checkedKeys = new WeakMap<CitizenRecord, { name: string; keys: string[] }>();
const keysOf = (c: CitizenRecord): string[] => {
  const checked = checkedKeys.get(c);
  return checked?.name === c.name ? checked.keys : nameIndex(c.name);
};

/**
 * What the two words each citizen carries are: the KeyIndex hashes of its two index entries. A
 * snapshot writes them with this stamp, and a start reads them back only under the same one.
 */
const nameIndexStamp = () => `keyHash of folded: and shaped: entries; ${nameKeysStamp()}`;

// What a start does a record at a time, in functions of their own: in the constructor, the same
// loops ran about three times slower (1.7 s against 0.6 s for 3 million citizens here).

/** Computes every citizen's two name-key hashes (the words it carries) from its name. */
function hashNames(citizens: RecordList<CitizenRecord>): void {
  citizens.carryWords();
  for (let i = 0; i < citizens.length; i++) {
    const { buf, at } = citizens.locate(i);
    const [folded, shaped] = nameIndex(citizenNameAt(buf, at));
    citizens.setWords(i, keyHash(folded!), keyHash(shaped!));
  }
}

/** The name index of every citizen, from the hashes they carry; counts them by class on the way. */
function indexCitizens(citizens: RecordList<CitizenRecord>, byClass: Record<string, number>): KeyIndex {
  const names = new KeyIndex(2 * citizens.length);
  for (let i = 0; i < citizens.length; i++) {
    const { buf, at } = citizens.locate(i);
    const c = citizenClassAt(buf, at);
    byClass[c] = (byClass[c] ?? 0) + 1;
    const place = citizens.placeAt(i);
    names.addHash(citizens.wordAt(i, 0), place);
    names.addHash(citizens.wordAt(i, 1), place);
  }
  return names;
}

type FeedCounts = { messages: number; questions: number; wall: number; verified: number };
function countMessage(feed: FeedCounts, flags: number): void {
  if (flags & M_WALL) feed.wall++;
  else if (flags & M_QUESTION) feed.questions++;
  else feed.messages++;
  if (flags & M_VERIFIED) feed.verified++;
}
function countFeed(messages: RecordList<Message>, feed: FeedCounts): void {
  for (let i = 0; i < messages.length; i++) {
    const { buf, at } = messages.locate(i);
    countMessage(feed, messageFlagsAt(buf, at));
  }
}

/**
 * The state in memory. Citizens, messages and receipts are compact lists (a few hundred bytes a
 * citizen with its wall shout, outside the V8 heap), decoded only for the records a read asks for;
 * so are idempotency records (which expire); drift windows, bounded in number and age, are objects.
 */
class Memory {
  seq: number;
  readonly citizens: RecordList<CitizenRecord>;
  readonly messages: RecordList<Message>;
  readonly receipts: RecordList<ReceiptEntry>;
  /**
   * Both name keys of every citizen, to the citizen's place (hashes, not strings: a Map of keys to
   * citizens would cost about 250 bytes a citizen). Names stored before keys existed may share one.
   */
  readonly names: KeyIndex;
  /** Receipt positions by id. */
  readonly receiptById = new Map<string, number>();
  /** Kept in the order they were made, so pruning stops at the first record still young. */
  readonly idempotency = new IdempotencyRecords();
  readonly windows: DriftWindows;
  /** Windows the snapshot read without the time they moved (written before windows had one). */
  untimedWindows = 0;
  drift: Drift;
  telemetry: object | null;
  /** The name keys' hashes came from the snapshot (not computed at this start). */
  readonly nameKeysRead: boolean;
  readonly byClass: Record<string, number> = {};
  readonly feed = { messages: 0, questions: 0, wall: 0, verified: 0 };
  /** Estimated bytes of what is held as objects (the receipt index). */
  #objectBytes = 0;
  /** Where each list stood when the last snapshot or delta was captured: what a delta adds is past it. */
  #written = { citizens: 0, messages: 0, receipts: 0 };
  /** Idempotency records written since then, by key (the windows keep their own). */
  #changedKeys = new Set<string>();

  /**
   * Adopts what a snapshot read (its lists as they are), and counts. Windows read without a time
   * count as moved at `openedAt` (ms).
   */
  constructor(data: LoadedData, bounds: DriftBounds, openedAt: number) {
    this.seq = data.seq;
    this.drift = data.drift;
    this.telemetry = data.telemetry;
    this.citizens = data.citizens;
    this.messages = data.messages;
    this.receipts = data.receipts;
    // Two keys a citizen, hashed: read from the snapshot when it carries them under this process's
    // stamp, else computed from each name (about 3 µs a citizen; 10 s for 3 million).
    this.nameKeysRead = this.citizens.carriesWords && data.nameKeys === nameIndexStamp();
    if (!this.nameKeysRead) hashNames(this.citizens);
    this.names = indexCitizens(this.citizens, this.byClass);
    countFeed(this.messages, this.feed);
    for (let i = 0; i < this.receipts.length; i++) this.#indexReceipt(this.receipts.idAt(i), i);
    for (const r of data.idempotency) this.apply({ seq: data.seq, op: 'idempotency.put', v: r });
    this.windows = new DriftWindows(bounds);
    for (const line of data.windows) {
      if (line[2] === undefined && line[1].length > 0) this.untimedWindows++;
      this.windows.load(line, openedAt);
    }
    this.windows.settle();
    // All of it is on disk already: a delta holds what comes from here on (the journal's tail first).
    this.#written = { citizens: this.citizens.mark(), messages: this.messages.mark(), receipts: this.receipts.mark() };
    this.#changedKeys.clear();
    this.windows.takeChanged();
  }

  /** Bytes the state holds in memory: the compact lists, idempotency records and name index exactly, the objects estimated. */
  get bytes(): number {
    return (
      this.citizens.bytes +
      this.messages.bytes +
      this.receipts.bytes +
      this.names.bytes +
      this.idempotency.bytes +
      this.windows.bytes +
      this.#objectBytes
    );
  }

  #countMessage(flags: number): void {
    countMessage(this.feed, flags);
  }

  #indexReceipt(id: string, index: number): void {
    this.receiptById.set(id, index);
    this.#objectBytes += OBJECT_OVERHEAD_BYTES / 2 + id.length;
  }

  /** Applies one journal entry. Pure bookkeeping: no I/O. */
  apply(entry: JournalEntry): void {
    this.seq = Math.max(this.seq, entry.seq);
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
        const [folded, shaped] = keysOf(c);
        const hashes = [keyHash(folded!), keyHash(shaped!)] as const;
        const place = this.citizens.insert(c, true, ...hashes);
        if (place === -1) return;
        this.names.addHash(hashes[0], place);
        this.names.addHash(hashes[1], place);
        this.byClass[c.class] = (this.byClass[c.class] ?? 0) + 1;
        return;
      }
      case 'message.add': {
        const m = entry.v as Message;
        this.messages.insert(m, false);
        this.#countMessage(
          (m.verified ? M_VERIFIED : 0) | (m.wall ? M_WALL : 0) | (m.kind === 'question' ? M_QUESTION : 0),
        );
        return;
      }
      case 'idempotency.put': {
        const r = entry.v as IdempotencyRecord;
        this.idempotency.set(r);
        this.#changedKeys.add(r.keyHash);
        return;
      }
      case 'drift.record': {
        const { entityId, appended, keep, sample } = entry.v as {
          entityId: string;
          appended: number[];
          keep: number;
          sample: DriftSample;
        };
        const d = this.drift;
        // The step's own time, not the clock: a replay forgets and trims what the live store did.
        const at = Date.parse(sample.at);
        this.windows.move(entityId, appended, keep, Number.isFinite(at) ? at : 0);
        d.samples++;
        d.contraction_count += sample.contraction_attempts;
        if (sample.fail_closed) d.fail_closed++;
        d.by_verdict[sample.verdict] = (d.by_verdict[sample.verdict] ?? 0) + 1;
        d.recent = [...d.recent.slice(-(DRIFT_SAMPLES_KEPT - 1)), sample];
        return;
      }
      case 'telemetry.save': {
        this.telemetry = entry.v as object;
        return;
      }
      case 'receipt.append': {
        const r = entry.v as ReceiptEntry;
        if (this.receiptById.has(r.id)) return;
        this.receipts.push(r);
        this.#indexReceipt(r.id, this.receipts.length - 1);
        return;
      }
      default:
        throw new Error(`unknown journal operation ${entry.op}`);
    }
  }

  /**
   * The oldest citizen (by id, time-ordered) holding one of these name keys, other than `except`,
   * or null. The index gives places by hash, so each candidate's own keys are checked.
   */
  holder(keys: string[], except?: string): CitizenRecord | null {
    let oldest: CitizenRecord | null = null;
    for (const key of keys) {
      for (const place of this.names.candidates(key)) {
        const c = this.citizens.atPlace(place);
        if (c.memberId === except || (oldest && oldest.memberId <= c.memberId) || !nameIndex(c.name).includes(key))
          continue;
        oldest = c;
      }
    }
    return oldest;
  }

  /** Forgets idempotency records expired at `now`, oldest first; how many went. */
  pruneIdempotency(now: number): number {
    return this.idempotency.prune(now, IDEMPOTENCY_TTL_MS);
  }

  /**
   * The state as it is now, without expired idempotency records, for a snapshot written while
   * writes go on; with `from` (the sequence of the last file written), a delta: only what was
   * written since that file. Records are never changed once stored, so views of the compact lists
   * (a copy of their positions) and copies of the few objects that change in place keep it from
   * moving. `written()` once it is on disk (the next delta starts from it), `failed()` otherwise.
   */
  capture(now: number, from?: number): { data: SnapshotData; written: () => void; failed: () => void } {
    const young = (r: IdempotencyRecord | undefined): r is IdempotencyRecord =>
      r !== undefined && now - Date.parse(r.createdAt) < IDEMPOTENCY_TTL_MS;
    const marks = { citizens: this.citizens.mark(), messages: this.messages.mark(), receipts: this.receipts.mark() };
    const since = from === undefined ? { citizens: 0, messages: 0, receipts: 0 } : this.#written;
    const changed = { idempotency: this.#changedKeys, windows: this.windows.takeChanged() };
    this.#changedKeys = new Set();
    const data: SnapshotData = {
      seq: this.seq,
      drift: { ...this.drift, by_verdict: { ...this.drift.by_verdict } },
      telemetry: this.telemetry,
      citizens: this.citizens.view(since.citizens),
      messages: this.messages.view(since.messages),
      idempotency:
        from === undefined
          ? this.idempotency.view(now, IDEMPOTENCY_TTL_MS)
          : [...changed.idempotency].map((k) => this.idempotency.get(k)).filter(young),
      receipts: this.receipts.view(since.receipts),
      // A delta's line of a window trimmed or forgotten since carries no deltas: a read drops it.
      windows: from === undefined ? this.windows.lines() : this.windows.linesOf(changed.windows),
      nameKeys: nameIndexStamp(),
      ...(from === undefined ? {} : { from }),
    };
    return {
      data,
      written: () => (this.#written = marks),
      failed: () => {
        for (const k of changed.idempotency) this.#changedKeys.add(k);
        this.windows.restoreChanged(changed.windows);
      },
    };
  }
}

/** One write of a unit. */
interface Write {
  op: string;
  v: unknown;
}
const maybe = (op: string, v: unknown): Write[] => (v === undefined ? [] : [{ op, v }]);

/** The heap this process runs in, as V8 reports it (node's --max-old-space-size, or what the machine gives). */
export const heapLimitBytes = (): number => getHeapStatistics().heap_size_limit;
/**
 * EMBEDDED_MAX_BYTES when it is not set: half the heap limit. The compact lists live outside the
 * heap and the rest of the state in it, so at the ceiling the process needs about the heap's limit
 * again beside its own, and a snapshot written and read a chunk at a time adds little to that.
 */
export const defaultMaxBytes = (): number => Math.floor(heapLimitBytes() / 2);
/** A delta is written once the journal holds 1/DELTA_SHARE of the snapshot (see maybeCompact). */
const DELTA_SHARE = 32;
/** Past this share of its ceiling the store warns (log and /readyz). */
export const NEAR_CEILING = 0.9;

export interface EmbeddedStoreOptions {
  dir: string;
  logger: Logger;
  /** Compact the journal into the snapshot after this many entries... */
  compactEvery?: number;
  /**
   * ...or once the journal files (every one since the last snapshot, across restarts) hold this
   * many bytes; either way, only once they hold as many as the snapshot.
   */
  compactBytes?: number;
  /** Told of each durable write and each refused one (metrics). */
  observer?: JournalObserver | undefined;
  /** The ceiling: past this many bytes in memory, writes answer 503 STORE_FULL (EMBEDDED_MAX_BYTES). */
  maxBytes?: number | undefined;
  /** How snapshots and journals are read and written in pieces (tests make them tiny). */
  chunks?: ChunkOptions;
  /** How many drift windows are kept, and for how long (DRIFT_BOUNDS unless tests make them small). */
  driftBounds?: DriftBounds;
  /** The clock a start forgets drift windows by (those the retention forgot while the store was closed). */
  now?: () => Date;
  /**
   * A salvage (npm run store-salvage): every intact record is read, past damage, and this is told
   * what was damaged before anything is written; then the store is written anew whole (a snapshot
   * of what was read), which leaves the damaged files behind. Without it, damage refuses the open.
   */
  salvage?: (found: StoreDamage) => Promise<void>;
}

/** What a read of a data folder found: damage, and the torn tail it cut. */
export interface StoreDamage {
  dir: string;
  damage: Damage[];
  torn: JournalScan['torn'];
}

/** The one line a start that finds damage stops with: the file, the byte, what is intact after it, what to run. */
export function damageLine(found: StoreDamage): string {
  const first = found.damage[0]!;
  const more = found.damage.length - 1;
  return (
    `store damaged: ${first.file} at byte ${first.offset} (${first.end - first.offset} bytes ${first.reason ? `damaged: ${first.reason}` : 'fail their checksum or do not parse'}; ` +
    `${first.intactAfter} intact ${first.unit === 'entries' ? 'journal entries' : 'lines'} after them in that file` +
    `${more > 0 ? `; ${more} more damaged place${more === 1 ? '' : 's'}` : ''}); no damaged file was changed: ` +
    `copy the folder, then run \`npm run store-salvage -- ${found.dir}\` or restore from a backup (docs/deploy.md)`
  );
}

/** A data folder with damaged records: a start refuses it (StartupError: one line, no stack). */
export class StoreDamagedError extends StartupError {
  readonly found: StoreDamage;
  constructor(found: StoreDamage) {
    super(damageLine(found));
    this.found = found;
  }
}

/** How full an embedded store is. */
export interface Capacity {
  bytes: number;
  maxBytes: number;
  citizens: number;
}

/** The embedded store: a Store that knows its ceiling, and can be compacted on demand. */
export interface EmbeddedStore extends Store {
  capacity(): Capacity;
  /** Writes a snapshot of everything now (or waits for the one under way) and removes the journals it covers. */
  compact(): Promise<void>;
}

/** Reads and writes against one Memory; `commit` decides what makes a write durable. */
function storeOver(
  memory: Memory,
  commit: (op: string, v: unknown) => Promise<void>,
  close: () => Promise<void>,
): Store {
  // Writes that belong together go in one journal entry.
  const commitAll = (writes: Write[]) =>
    writes.length === 1 ? commit(writes[0]!.op, writes[0]!.v) : commit('unit', writes);
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
        // The check and the claim in one synchronous step, before the journal write.
        const keys = nameIndex(citizen.name);
        checkedKeys.set(citizen, { name: citizen.name, keys });
        const holder =
          memory.holder(keys, citizen.memberId)?.name ??
          keys.map((key) => claimedNames.get(key)).find((name) => name !== undefined);
        if (holder !== undefined) throw new NameTaken(citizen.name, holder);
        for (const key of keys) claimedNames.set(key, citizen.name);
        try {
          await commitAll([
            { op: 'citizen.add', v: citizen },
            ...maybe('message.add', shout),
            ...maybe('idempotency.put', idempotency),
          ]);
        } finally {
          for (const key of keys) claimedNames.delete(key);
        }
      },
      get: async (memberId) => {
        const i = memory.citizens.indexOfId(memberId);
        return i === -1 ? null : memory.citizens.at(i);
      },
      holding: async (name) => memory.holder(nameIndex(name)),
      list: async (query) => pageNewestFirst(memory.citizens, query),
      stats: async () => ({ total: memory.citizens.length, byClass: { ...memory.byClass } }),
    },
    feed: {
      add: (message, idempotency) =>
        commitAll([{ op: 'message.add', v: message }, ...maybe('idempotency.put', idempotency)]),
      list: async (query) => pageNewestFirst(memory.messages, query),
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
      window: async (entityId, now) => memory.windows.get(entityId, now.getTime()),
      record: (entityId, appended, keep, sample, idempotency) =>
        commitAll([
          { op: 'drift.record', v: { entityId, appended, keep, sample } satisfies DriftWrite },
          ...maybe('idempotency.put', idempotency),
        ]),
      // As idempotency records: memory forgets, the next snapshot or delta leaves them out, and a
      // start forgets again what the journal brings back.
      prune: async (now) => memory.windows.forget(now.getTime()),
      metrics: async (recent) => {
        const d = memory.drift;
        return {
          samples: d.samples,
          contraction_count: d.contraction_count,
          fail_closed: d.fail_closed,
          by_verdict: { ...d.by_verdict },
          last: d.recent.at(-1) ?? null,
          recent: d.recent.slice(-recent).reverse(),
        };
      },
    },
    receipts: {
      append: (build, also = {}) => {
        const run = receiptTail.then(async () => {
          const log = memory.receipts;
          const built = build(log.length > 0 ? log.idAt(log.length - 1) : null, log.length);
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
      get: async (id) => {
        const i = memory.receiptById.get(id);
        return i === undefined ? null : memory.receipts.at(i);
      },
      list: async (query) => pageLogNewestFirst(memory.receipts, query),
      idsFrom: async (start) => {
        const ids: string[] = [];
        for (let i = Math.max(0, start); i < memory.receipts.length; i++) ids.push(memory.receipts.idAt(i));
        return ids;
      },
    },
    telemetry: {
      load: async () => (memory.telemetry ? structuredClone(memory.telemetry) : null),
      save: (snapshot) => commit('telemetry.save', snapshot),
      others: async () => [],
      // No claimNonce: one process owns the data folder, so its verifier's own nonce memory sees
      // every use; a journal write per signed request would add nothing.
    },
    close,
  };
}

/** What an embedded store holds that the Store's reads cannot list, for moving it elsewhere (npm run move-to-postgres). */
export interface EmbeddedHoldings {
  /** Every idempotency record not yet expired, oldest first. */
  idempotency(): Iterable<IdempotencyRecord>;
  /** Every drift window, by entity, with when it last moved (ms), least recently moved first. */
  windows(): Iterable<[entityId: string, deltas: number[], movedAt: number]>;
}
const memories = new WeakMap<Store, Memory>();

/** The holdings of a store opened by openEmbeddedStore (read live: a move runs while nothing writes). */
export function holdingsOf(store: Store): EmbeddedHoldings {
  const memory = memories.get(store);
  if (!memory) throw new TypeError('not an embedded store');
  return { idempotency: () => memory.idempotency.values(), windows: () => memory.windows.entries() };
}

/** A store that keeps nothing on disk (DATA_DIR=:memory:): for trials and to measure what durability costs. */
export function openMemoryStore(options: { driftBounds?: DriftBounds } = {}): Store {
  const memory = new Memory(emptyData(), options.driftBounds ?? DRIFT_BOUNDS, Date.now());
  let seq = 0;
  return storeOver(
    memory,
    async (op, v) => memory.apply({ seq: ++seq, op, v }),
    async () => undefined,
  );
}

/**
 * The embedded default store: state in memory, every write made durable in an append-only journal
 * (group commit, O_DSYNC) before it is acknowledged, and the journal compacted in the background
 * into a lowdb snapshot. Both are read and written a chunk at a time, so a start reads back any
 * state the store accepted; past its ceiling it accepts no more (503 STORE_FULL).
 */
export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
  const { dir, logger } = options;
  const compactEvery = options.compactEvery ?? 20_000;
  const compactBytes = options.compactBytes ?? 16 * 1024 * 1024;
  const maxBytes = options.maxBytes ?? defaultMaxBytes();
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST' && error.code !== 'EROFS') throw error;
  });
  // Private whatever the umask (or an older version) made it: no other local user lists or reads it.
  await chmod(dir, 0o700).catch(() => undefined);
  const opened = performance.now();
  const salvaging = options.salvage !== undefined;
  const file = new SnapshotFile(join(dir, SNAPSHOT_FILE), join(dir, LEGACY_SNAPSHOT_FILE), options.chunks, salvaging);
  const db = new Low<SnapshotData>(file, emptyData());
  await db.read();
  let snapshotBytes = await stat(file.readLegacy ? file.legacyPath : file.path).then(
    (s) => s.size,
    () => 0,
  );
  const now = options.now ?? (() => new Date());
  const memory = new Memory(db.data as LoadedData, options.driftBounds ?? DRIFT_BOUNDS, now().getTime());
  // Keys computed for a snapshot's citizens (not for a journal's, which a start always computes).
  const snapshotKeysComputed = !memory.nameKeysRead && memory.citizens.length > 0;
  // The lists now belong to memory; lowdb's data is set again for each snapshot.
  db.data = emptyData();
  const journal = new Journal(dir, options.observer, options.chunks);
  const base = memory.seq;
  // The sequence of the last file written (snapshot or delta): the next delta follows it.
  let writtenSeq = base;
  let replayed = 0;
  const scan = await journal.replay(
    (entry) => {
      if (entry.seq <= base) return;
      memory.apply(entry);
      replayed++;
    },
    { check: entryFault },
  );
  if (scan.torn) logger.warn(scan.torn, 'journal: cut a torn tail (a write that was never acknowledged)');
  for (const tail of scan.oldTails)
    logger.warn(tail, 'journal: cut a torn tail an earlier version left in an older file (never acknowledged)');
  const found: StoreDamage = { dir, damage: [...file.damage, ...scan.damage], torn: scan.torn };
  // Nothing past damage is used, and nothing is written over it: the operator salvages or restores.
  if (!salvaging && found.damage.length > 0) throw new StoreDamagedError(found);
  if (salvaging) await options.salvage!(found);
  // Records of a format without checksums (or a salvage's) are written anew, with them, at once;
  // so are windows without the time they moved (taken as moved now), so that time is kept.
  const migrating =
    salvaging ||
    file.readLegacy ||
    (file.readVersion !== undefined && file.readVersion < 4) ||
    scan.unchecked > 0 ||
    memory.untimedWindows > 0;
  // The journal brings back records that expired while the process was down, and windows the
  // retention forgot since (each step forgot what was old at its own time; this is the time since).
  memory.pruneIdempotency(Date.now());
  memory.windows.forget(now().getTime());
  let seq = memory.seq;
  let sinceSnapshot = replayed;
  try {
    await journal.rotate(seq + 1);
  } catch (error) {
    // Reads still work from what was replayed; each write retries the disk and answers 503 until it can.
    logger.error({ err: error, dir }, 'store opened read-only: the data folder refuses writes');
  }
  const capacity = (): Capacity => ({ bytes: memory.bytes, maxBytes, citizens: memory.citizens.length });
  logger.info(
    {
      citizens: memory.citizens.length,
      messages: memory.messages.length,
      replayed,
      nameKeys: memory.nameKeysRead ? 'read' : 'computed',
      journalFiles: journal.files,
      journalBytes: journal.totalSize,
      snapshotBytes,
      deltas: file.deltas.size,
      deltaBytes: file.deltaBytes,
      bytes: memory.bytes,
      maxBytes,
      ms: Math.round(performance.now() - opened),
    },
    migrating ? 'store opened from an old-format snapshot or journal (or a salvage); writing it anew' : 'store opened',
  );

  // Warned once each time the store passes NEAR_CEILING of its ceiling, and once when full.
  let warned: 'near' | 'full' | undefined;
  function watchCeiling(): void {
    const { bytes } = capacity();
    const level = bytes >= maxBytes ? 'full' : bytes >= NEAR_CEILING * maxBytes ? 'near' : undefined;
    if (level === warned) return;
    warned = level;
    if (level === 'near')
      logger.warn(
        { bytes, maxBytes },
        'store near its ceiling (EMBEDDED_MAX_BYTES): move to PostgreSQL (DATABASE_URL) before it is full',
      );
    if (level === 'full')
      logger.error(
        { bytes, maxBytes },
        'store full (EMBEDDED_MAX_BYTES): writes answer 503 STORE_FULL; move to PostgreSQL (DATABASE_URL)',
      );
  }
  watchCeiling();

  // A start reads the snapshot and its deltas at about 1 µs a record, but replays the journal at
  // 14-27 µs an entry (JSON, name keys, encoding). So the journal is folded into a delta (what was
  // written since the last file, in the snapshot's form) once it holds 1/DELTA_SHARE of the
  // snapshot, and the whole register is rewritten only once its deltas hold as much as the
  // snapshot: a rewrite's cost per write stays the same however large the register grows, a
  // delta's is that of its own records, and a start replays a tail of at most 1/DELTA_SHARE of the
  // snapshot (or compactBytes) instead of one as large as it.
  let compacting: Promise<void> | undefined;
  async function compact(whole: boolean): Promise<void> {
    const started = performance.now();
    const upTo = seq;
    const old = await journal.rotate(upTo + 1);
    const capture = memory.capture(Date.now(), whole ? undefined : writtenSeq);
    try {
      if (whole) {
        db.data = capture.data;
        try {
          await db.write();
        } finally {
          db.data = emptyData();
        }
      } else await file.writeDelta(capture.data);
    } catch (error) {
      capture.failed();
      throw error;
    }
    capture.written();
    writtenSeq = capture.data.seq;
    if (whole)
      snapshotBytes = await stat(file.path).then(
        (s) => s.size,
        () => 0,
      );
    await journal.remove(old);
    logger.info(
      {
        seq: upTo,
        into: whole ? 'snapshot' : 'delta',
        bytes: file.lastWrite?.bytes,
        snapshotBytes,
        deltas: file.deltas.size,
        chunks: file.lastWrite?.chunks,
        ms: Math.round(performance.now() - started),
      },
      'store compacted',
    );
  }
  function maybeCompact(force = false): void {
    const journalBytes = journal.totalSize;
    const due =
      (sinceSnapshot >= compactEvery || journalBytes >= compactBytes) && journalBytes >= snapshotBytes / DELTA_SHARE;
    if (compacting || !(force || due)) return;
    const whole = force || snapshotBytes === 0 || file.deltaBytes + journalBytes >= snapshotBytes;
    sinceSnapshot = 0;
    compacting = compact(whole)
      .catch((error: unknown) =>
        logger.error({ err: error }, 'store compaction failed; the journal still holds every write'),
      )
      .finally(() => (compacting = undefined));
  }
  // An old-format snapshot is written anew at once, and so is one whose name keys this start had to
  // compute (no keys, or keys of another Unicode, ICU or confusables table), so the next reads them;
  // a journal left long by earlier runs is compacted now.
  maybeCompact(migrating || snapshotKeysComputed);

  /**
   * The process's file-size limit (RLIMIT_FSIZE) refuses the journal file more bytes (EFBIG), not a
   * new file: the writes after it go to a new one (older files stay until a snapshot holds them).
   * Only a file that holds entries is left (one whose first entry was refused would be again), and
   * not while a compaction, which starts a new file itself, is under way.
   */
  function startNewJournalFile(): void {
    if (compacting || journal.size === 0) return;
    logger.warn({ bytes: journal.size }, 'the journal file is at the file-size limit: writes go to a new file');
    compacting = journal
      .rotate(seq + 1)
      .then(() => undefined)
      .catch((error: unknown) => logger.error({ err: error }, 'a new journal file could not be started'))
      .finally(() => (compacting = undefined));
  }

  /** Since when, and how many, writes the disk has refused (logged when it starts and when it ends). */
  let refusing: { since: number; writes: number } | undefined;
  /** Makes one entry durable, then applies it. Rejects with 503 when the disk refuses or the store is full. */
  async function commit(op: string, v: unknown): Promise<void> {
    // The ledger is replaced, not added to, and bounded: it may still be saved when the store is full.
    if (op !== 'telemetry.save' && memory.bytes >= maxBytes) throw new StoreFullError(memory.bytes, maxBytes);
    // Past 2^53 - 1 a sequence stops counting, and a start would refuse the entry: nothing is acknowledged there.
    if (seq >= Number.MAX_SAFE_INTEGER) throw new StoreUnavailableError(new Error('journal sequence exhausted'));
    const entry = { seq: ++seq, op, v };
    try {
      await journal.append(entry);
    } catch (error) {
      // Once an outage, not a line and a stack for every write a full disk refuses.
      if (refusing === undefined) {
        refusing = { since: Date.now(), writes: 0 };
        logger.error({ err: error, op }, 'store write failed: writes answer 503 until the disk takes them again');
      }
      refusing.writes++;
      if ((error as NodeJS.ErrnoException).code === 'EFBIG') startNewJournalFile();
      throw new StoreUnavailableError(error);
    }
    if (refusing !== undefined) {
      logger.warn({ refused: refusing.writes, forMs: Date.now() - refusing.since }, 'store writes again');
      refusing = undefined;
    }
    memory.apply(entry);
    sinceSnapshot++;
    watchCeiling();
    maybeCompact();
  }

  const store = storeOver(memory, commit, async () => {
    await compacting;
    await journal.close();
  });
  const embedded = {
    ...store,
    capacity,
    compact: async () => {
      await compacting;
      maybeCompact(true);
      await compacting;
    },
  };
  memories.set(embedded, memory);
  return embedded;
}
