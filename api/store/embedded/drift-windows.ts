import { callersTrimmedTo, windowOwner, type DriftBounds } from '../types.ts';

/**
 * A window as a snapshot line holds it: key, deltas, when it last moved (ms). A line without a
 * time was written before windows had one; a line without deltas is a window a delta no longer
 * holds (a trimmed or forgotten one).
 */
export type WindowLine = [key: string, deltas: number[], movedAt?: number];

/** A client's windows, least recently moved first; `seen` and `pass` are a trim's count of them. */
interface Client {
  keys: Set<string>;
  seen: number;
  pass: number;
}

interface Held {
  deltas: number[];
  /** When it last moved (ms). */
  movedAt: number;
  /** The client whose window it is; null for a citizen's own. */
  client: Client | null;
}

// What a window costs beyond its key and deltas (its object, its array, its entries in the map and
// its client's set), and what a client's set costs: measured on Node 22, 100,000 windows of 8
// deltas took 433 bytes each with 32-character keys of 400 clients, 619 each of 100,000 clients.
const WINDOW_OVERHEAD_BYTES = 340;
const CLIENT_OVERHEAD_BYTES = 190;
const heldBytes = (key: string, w: Held) => WINDOW_OVERHEAD_BYTES + key.length + 8 * w.deltas.length;

/**
 * The embedded store's drift windows, under their bounds (DriftBounds). Every change is a
 * function of the journal entries applied and their own times (a step's `at`), never of the clock,
 * so replaying a journal forgets and trims exactly what the live store did: a step first forgets
 * the windows not moved within the retention at its own time; a client's new window beyond its
 * cap drops the client's least recently moved; callers' windows past their cap are trimmed from
 * the clients that hold the most. Windows are kept in the order they moved (least recently first),
 * overall and per client, so each of these finds what it drops without a search or a sort.
 */
export class DriftWindows {
  readonly #bounds: DriftBounds;
  /** Every window, least recently moved first. */
  readonly #all = new Map<string, Held>();
  /** Callers' windows by client. */
  readonly #clients = new Map<string, Client>();
  #callers = 0;
  #bytes = 0;
  #trims = 0;
  /** Keys moved, trimmed or forgotten since the last capture, in the order of their last change. */
  #changed = new Set<string>();

  constructor(bounds: DriftBounds) {
    this.#bounds = bounds;
  }

  get bytes(): number {
    return this.#bytes;
  }
  get size(): number {
    return this.#all.size;
  }
  /** Callers' windows (every key of the form `<entity_id> @<client>`). */
  get callers(): number {
    return this.#callers;
  }

  /** The deltas of a window moved within the retention at `now`, else none. */
  get(key: string, now: number): number[] {
    const w = this.#all.get(key);
    return w && w.movedAt > now - this.#bounds.retentionMs ? w.deltas : [];
  }

  /** A step: forgets what the retention at `at` forgets, appends to the window (afresh if it was forgotten), then bounds. */
  move(key: string, appended: number[], keep: number, at: number): void {
    this.forget(at);
    const old = this.#all.get(key);
    const kept = old && old.movedAt > at - this.#bounds.retentionMs ? old.deltas : [];
    if (old) this.#drop(key);
    const client = this.#put(key, [...kept, ...appended].slice(-keep), Math.max(at, old?.movedAt ?? at));
    if (old || client === null) return;
    // A new window of a client past its cap takes the place of the client's least recently moved.
    for (const k of client.keys) {
      if (client.keys.size <= this.#bounds.perClient || k === key) break;
      this.#drop(k);
    }
    if (this.#callers > this.#bounds.callers) this.#trim(callersTrimmedTo(this.#bounds.callers));
  }

  /**
   * Forgets the windows not moved within the retention at `now`, least recently moved first,
   * stopping at the first still kept (times follow the order windows moved in); how many went.
   */
  forget(now: number): number {
    const before = now - this.#bounds.retentionMs;
    let n = 0;
    for (const [key, w] of this.#all) {
      if (w.movedAt > before) break;
      this.#drop(key);
      n++;
    }
    return n;
  }

  /** A window as a snapshot or delta line gives it; `untimed` is when a line carries no time. */
  load([key, deltas, movedAt]: WindowLine, untimed: number): void {
    if (this.#all.has(key)) this.#drop(key);
    if (deltas.length > 0) this.#put(key, deltas, movedAt ?? untimed);
  }

  /** After loading: the bounds applied to what was read (a store written under larger ones). */
  settle(): void {
    for (const client of this.#clients.values())
      for (const k of [...client.keys].slice(0, Math.max(0, client.keys.size - this.#bounds.perClient))) this.#drop(k);
    if (this.#callers > this.#bounds.callers) this.#trim(callersTrimmedTo(this.#bounds.callers));
  }

  /** Every window as a snapshot line, least recently moved first: a read puts them back in that order. */
  lines(): WindowLine[] {
    return [...this.#all].map(([key, w]) => [key, w.deltas, w.movedAt]);
  }

  /** The changed windows as delta lines, in the order of their last change; one no longer held has no deltas. */
  linesOf(keys: Iterable<string>): WindowLine[] {
    return [...keys].map((key) => {
      const w = this.#all.get(key);
      return w ? [key, w.deltas, w.movedAt] : [key, []];
    });
  }

  /** The keys changed since the last call (for a delta); `restoreChanged` puts them back when the delta was not written. */
  takeChanged(): Set<string> {
    const changed = this.#changed;
    this.#changed = new Set();
    return changed;
  }
  restoreChanged(keys: Set<string>): void {
    const later = this.#changed;
    this.#changed = new Set([...keys, ...later]);
  }

  /** Every window, by key: its deltas and when it moved (for a move to PostgreSQL), least recently moved first. */
  *entries(): Generator<[key: string, deltas: number[], movedAt: number]> {
    for (const [key, w] of this.#all) yield [key, w.deltas, w.movedAt];
  }

  /** Adds a window as the most recently moved; its client, or null for a citizen's own. */
  #put(key: string, deltas: number[], movedAt: number): Client | null {
    const owner = windowOwner(key);
    let client: Client | null = null;
    if (owner !== null) {
      client = this.#clients.get(owner) ?? null;
      if (!client) {
        this.#clients.set(owner, (client = { keys: new Set(), seen: 0, pass: 0 }));
        this.#bytes += CLIENT_OVERHEAD_BYTES;
      }
      client.keys.add(key);
      this.#callers++;
    }
    const w: Held = { deltas, movedAt, client };
    this.#all.set(key, w);
    this.#bytes += heldBytes(key, w);
    this.#touch(key);
    return client;
  }

  #drop(key: string): void {
    const w = this.#all.get(key)!;
    this.#all.delete(key);
    this.#bytes -= heldBytes(key, w);
    this.#touch(key);
    if (w.client === null) return;
    w.client.keys.delete(key);
    if (w.client.keys.size === 0) {
      this.#clients.delete(windowOwner(key)!);
      this.#bytes -= CLIENT_OVERHEAD_BYTES;
    }
    this.#callers--;
  }

  #touch(key: string): void {
    this.#changed.delete(key);
    this.#changed.add(key);
  }

  /**
   * Trims callers' windows to `target` by one order: every client's most recently moved window
   * before any client's second, and so on (rank); of one rank, the more recently moved first. So a
   * client holding few windows keeps them while others hold more, however many clients a flood
   * comes from. `level` is the deepest rank every client keeps whole; of the rank below it (the
   * boundary) the least recently moved `over` go. One pass over the windows in the order they
   * moved finds them all: a window's rank is its client's windows less those of its client seen
   * before it in that pass.
   */
  #trim(target: number): void {
    let deepest = 0;
    for (const client of this.#clients.values()) deepest = Math.max(deepest, client.keys.size);
    // atLeast[r]: clients holding r windows or more (the windows of rank r).
    const atLeast = new Array<number>(deepest + 2).fill(0);
    for (const client of this.#clients.values()) atLeast[client.keys.size]!++;
    for (let r = deepest - 1; r >= 1; r--) atLeast[r]! += atLeast[r + 1]!;
    let level = 0;
    let kept = 0;
    while (level < deepest && kept + atLeast[level + 1]! <= target) kept += atLeast[++level]!;
    if (level === deepest) return;
    let over = atLeast[level + 1]! - (target - kept);
    const pass = ++this.#trims;
    const dropped: string[] = [];
    for (const [key, { client }] of this.#all) {
      if (client === null) continue;
      if (client.pass !== pass) {
        client.pass = pass;
        client.seen = 0;
      }
      const rank = client.keys.size - client.seen++;
      if (rank > level + 1 || (rank === level + 1 && over-- > 0)) dropped.push(key);
    }
    for (const key of dropped) this.#drop(key);
  }
}
