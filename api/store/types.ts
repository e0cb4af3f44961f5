import type { Citizen, Message } from '../schemas/citizenship.ts';

/** A citizen as stored: the public record plus the SHA-256 of its passport number. */
export interface CitizenRecord extends Citizen {
  passportHash: string;
}

/**
 * What an Idempotency-Key keeps: committed in the same unit as the write it answers (one journal
 * entry, one transaction), so a write is never kept without it, nor it without the write.
 */
/**
 * Given to a keyed write by the write pipeline: seals the body it is about to answer into the
 * idempotency record that its store write commits with it (one journal entry, one transaction).
 */
export type KeepAnswer = (body: unknown) => IdempotencyRecord;

export interface IdempotencyRecord {
  /** SHA-256 of route and Idempotency-Key. */
  keyHash: string;
  /** SHA-256 of the request body the key was first used with. */
  fingerprint: string;
  status: number;
  /**
   * The answer's body, AES-256-GCM encrypted under a key derived from the Idempotency-Key; null for
   * a route that changed nothing (it runs again on a repeat, so its answer need not be kept).
   */
  sealed: string | null;
  createdAt: string;
}

export interface PageQuery {
  /** Opaque cursor from a previous page's nextCursor. */
  cursor?: string | null;
  limit: number;
}
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * Citizens, newest first. Names are unique by their look-alike keys (`nameKeys` in
 * api/names/name-rule.ts): the store keeps that true under concurrent writes. Citizens stored
 * before keys existed keep their names; of a pair that already looked alike, the older holds the key.
 */
export interface CitizenStore {
  /**
   * Adds a citizen and, in the same atomic write, its wall shout and the idempotency record of its
   * answer. Rejects with NameTaken, writing nothing, when a citizen already holds a name that looks like its name.
   */
  add(citizen: CitizenRecord, shout?: Message, idempotency?: IdempotencyRecord): Promise<void>;
  get(memberId: string): Promise<CitizenRecord | null>;
  /** The citizen whose name looks like `name` (equal name keys), or null. */
  holding(name: string): Promise<CitizenRecord | null>;
  list(query: PageQuery): Promise<Page<CitizenRecord>>;
  stats(): Promise<{ total: number; byClass: Record<string, number> }>;
}

/** Feed messages (including wall shouts), newest first. */
export interface FeedStore {
  /** Adds a message and, in the same atomic write, the idempotency record of its answer. */
  add(message: Message, idempotency?: IdempotencyRecord): Promise<void>;
  list(query: PageQuery): Promise<Page<Message>>;
  stats(): Promise<{ messages: number; questions: number; wall: number; verified: number }>;
}

export interface IdempotencyStore {
  get(keyHash: string, now: Date): Promise<IdempotencyRecord | null>;
  /** Keeps a record alone: for a route that changed nothing. A write's record goes with the write. */
  put(record: IdempotencyRecord): Promise<void>;
  /** Deletes records older than IDEMPOTENCY_TTL_MS at `now` (and abandoned claims); how many records went. */
  prune(now: Date): Promise<number>;
  /**
   * Claims a key for one run, across every process that shares the store: true when the caller may
   * run, false while another run holds it. A claim older than IDEMPOTENCY_CLAIM_MS was abandoned
   * (its process died) and is taken over.
   */
  claim(keyHash: string, now: Date): Promise<boolean>;
  /** Ends a claim, whether its run stored an answer or failed. */
  release(keyHash: string): Promise<void>;
  /**
   * A store shared by processes holds a claim as a lease of IDEMPOTENCY_LEASE_MS that its run
   * renews while it runs: a claim whose process died lapses within the lease, not the claim's
   * minute. A store of one process (its claims die with it) has none.
   */
  renew?(keyHash: string, now: Date): Promise<void>;
}

/** One scored request, as the drift metrics keep it. */
export interface DriftSample {
  decision_id: string;
  entity_id: string;
  verdict: string;
  delta_t: number;
  delta_window: number;
  failed_predicates: string[];
  contraction_attempts: number;
  fail_closed: boolean;
  at: string;
}

/** One scored step as the drift store records it: the entity's new deltas and the sample. */
export interface DriftWrite {
  entityId: string;
  appended: number[];
  /** How many deltas the entity's window keeps. */
  keep: number;
  sample: DriftSample;
}

/**
 * Drift windows per entity and the live drift metrics. A window's key is a citizen's own (its
 * memberId), or a caller's: `<entity_id> @<client>` (callerWindowKey). The store bounds them
 * (DriftBounds): a window not moved for `retentionMs` is forgotten; a client keeps at most
 * `perClient` windows, its least recently moved making room for a new one; callers' windows
 * together are at most `callers`, trimmed past it from the clients that hold the most. A citizen's
 * own window is never given up for a caller's.
 */
export interface DriftStore {
  /** The entity's recent step deltas, oldest first; none when the window was not moved within the retention at `now`. */
  window(entityId: string, now: Date): Promise<number[]>;
  /**
   * Appends the step deltas to the entity's window, keeping its last `keep`, and counts the
   * sample, in one write. Appending (not replacing) keeps windows right when steps of one entity
   * arrive at different processes. The idempotency record of the answer goes in the same write.
   * The sample's `at` is when the window moved; a window the retention forgot starts afresh.
   */
  record(
    entityId: string,
    appended: number[],
    keep: number,
    sample: DriftSample,
    idempotency?: IdempotencyRecord,
  ): Promise<void>;
  /** Deletes windows not moved within the retention at `now` (a bounded batch on a shared store); how many went. */
  prune(now: Date): Promise<number>;
  metrics(recent: number): Promise<{
    samples: number;
    contraction_count: number;
    fail_closed: number;
    by_verdict: Record<string, number>;
    last: DriftSample | null;
    recent: DriftSample[];
  }>;
}

/** A receipt of a dual exchange as the log keeps it: the content and its position. */
export interface ReceiptEntry {
  id: string;
  index: number;
  receipt: Record<string, unknown>;
}

/** The append-only receipt log (a hash chain and a Merkle log over receipt ids). */
/** What a receipt append commits with the receipt, in the same write. */
export interface ReceiptAlso {
  /** The scored steps the receipt records. */
  drift?: DriftWrite[];
  /** The idempotency record of the answer, made once the receipt's id is known. */
  idempotency?: (entry: ReceiptEntry) => IdempotencyRecord;
}

export interface ReceiptStore {
  /** Appends a receipt built from the id of the current head, and `also` in the same write; appends are serialised. */
  append(
    build: (prev: string | null, index: number) => { id: string; receipt: Record<string, unknown> },
    also?: ReceiptAlso,
  ): Promise<ReceiptEntry>;
  get(id: string): Promise<ReceiptEntry | null>;
  list(query: PageQuery): Promise<Page<ReceiptEntry>>;
  /** Receipt ids in log order, from position `start` on. */
  idsFrom(start: number): Promise<string[]>;
}

/**
 * The bot telemetry ledger, saved in batches by its owner. The stores keep it as a JSON document
 * whose shape only api/telemetry knows (`L`, its TelemetrySnapshot).
 */
export interface TelemetryStore<L extends object = object> {
  /**
   * The ledger this process starts from: on a store one process owns, what it saved last; on a
   * shared store, the ledgers of processes silent for longer than TELEMETRY_STALE_MS (they stopped)
   * folded by `fold` into this process's row, in one transaction, so rows stay one per live process.
   */
  load(fold: (ledgers: L[]) => L): Promise<L | null>;
  save(snapshot: L): Promise<void>;
  /** The ledgers other processes saved (none for a store that serves one process). */
  others(): Promise<L[]>;
  /**
   * Claims a verified Web Bot Auth signature's nonce for its signer, for every process that shares
   * the store, until `expiresAt` (seconds since the epoch): true for the first claim anywhere, false
   * while an earlier one holds it. Rejects when the store does not answer in its bounded time. A
   * store one process owns has none: that process's own nonce memory sees every use.
   */
  claimNonce?(signer: string, nonce: string, expiresAt: number): Promise<boolean>;
}

/** Every aggregate the service keeps. Nothing outside api/store knows how it is kept. */
export interface Store {
  citizens: CitizenStore;
  feed: FeedStore;
  idempotency: IdempotencyStore;
  drift: DriftStore;
  receipts: ReceiptStore;
  telemetry: TelemetryStore;
  close(): Promise<void>;
}

/** Idempotency keys are kept this long (DESIGN section 3). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A telemetry ledger not saved for this long belongs to a process that stopped (live ones save at least every 5 minutes). */
export const TELEMETRY_STALE_MS = 60 * 60 * 1000;
/** How long a claim on an Idempotency-Key holds before it counts as abandoned. */
export const IDEMPOTENCY_CLAIM_MS = 60 * 1000;
/** A shared store's claim lapses this long after its run last renewed it (every third of it). */
export const IDEMPOTENCY_LEASE_MS = 5 * 1000;

/** How many drift windows a store keeps, and for how long (docs/reference.md, Limits). */
export interface DriftBounds {
  /** A window not moved for this long is forgotten: read as empty, then deleted. */
  retentionMs: number;
  /** Windows one client keeps at most; a new one takes the place of its least recently moved. */
  perClient: number;
  /**
   * Callers' windows kept at most, over every client. Past it they are trimmed to
   * callersTrimmedTo(callers) by one order: every client keeps its most recently moved window
   * before any client keeps its second, and so on; of the windows of one rank, the more recently
   * moved are kept. So the clients that hold the most lose windows first: a client keeps its
   * windows while others hold more than it does.
   */
  callers: number;
}
/**
 * Drift samples a store keeps: the newest, for the metrics' `recent`. The totals count every sample
 * ever recorded; the samples themselves leave as newer ones come.
 */
export const DRIFT_SAMPLES_KEPT = 100;
/** The bounds a store keeps unless told others (tests make them small). */
export const DRIFT_BOUNDS: DriftBounds = { retentionMs: 30 * 24 * 60 * 60 * 1000, perClient: 256, callers: 100_000 };
/**
 * What callers' windows are trimmed to once past `callers`: 1/64 below it, so a trim, which reads
 * every caller's window, happens once per that many new windows however long a flood goes on.
 */
export const callersTrimmedTo = (callers: number): number => callers - Math.ceil(callers / 64);

/** The window a caller (by its client key) keeps for an entity that is not its own citizen's. */
export const callerWindowKey = (entityId: string, client: string): string => `${entityId} @${client}`;
/**
 * The client whose window a key names, or null for a citizen's own window. Entity ids hold no
 * space (ScoreRequestSchema), so the last ` @` is the one callerWindowKey wrote.
 */
export function windowOwner(key: string): string | null {
  const at = key.lastIndexOf(' @');
  return at === -1 ? null : key.slice(at + 2);
}
