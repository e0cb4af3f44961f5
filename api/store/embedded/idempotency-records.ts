import { keyHash as fnv } from './codec.ts';
import type { IdempotencyRecord } from '../types.ts';

// Idempotency records held as bytes outside the V8 heap: appended to chunks in the order they were
// made (so expiry drops them from the front), found through an open-addressing table of 32-bit
// hashes and positions. As objects in a Map, an oath's record cost about 1,150 bytes (hex hashes,
// base64 answer, ISO date, the object and its entry); here its bytes (the hashes and the sealed
// answer raw) and 24-48 bytes of table. Only the memory form changes: records are read and written
// as IdempotencyRecord objects, and the journal and snapshot keep them as they were.

// Chunks start small (a store with a few records holds a few KiB) and double up to this size.
const FIRST_CHUNK = 4 * 1024;
const LAST_CHUNK = 1024 * 1024;
// A position is chunk number × SPAN + offset in it (exact in a double for 2^29 chunks).
const SPAN = 2 ** 24;
const EMPTY = -1;
const GONE = -2;

// Flags of a record.
const DEAD = 1; // replaced by a later record for its key, or pruned
const SEALED = 2; // an answer is kept (sealed is not null)
const SEALED_RAW = 4; // the sealed answer is base64 text, held as its bytes
const KEY_RAW = 8; // keyHash is 64 lowercase hex digits, held as 32 bytes
const FINGERPRINT_RAW = 16; // likewise the fingerprint
const DATE_TEXT = 32; // createdAt is not what toISOString gives for its time: held as text

// length u32, flags u8, status u16, createdAt f64, then key, fingerprint (u16 length each), sealed (u32 length).
const HEAD = 4 + 1 + 2 + 8;

const HEX64 = /^[0-9a-f]{64}$/;
const textOf = (raw: boolean, s: string) => (raw ? Buffer.from(s, 'hex') : Buffer.from(s, 'utf8'));
/** The table's hash of a key: its first 32 bits when it is a SHA-256 in hex, FNV-1a otherwise. */
const hashOf = (key: string) => (HEX64.test(key) ? parseInt(key.slice(0, 8), 16) >>> 0 : fnv(key));

/** One record as bytes. */
function encode(r: IdempotencyRecord): Buffer {
  const keyRaw = HEX64.test(r.keyHash);
  const fpRaw = HEX64.test(r.fingerprint);
  const key = textOf(keyRaw, r.keyHash);
  const fp = textOf(fpRaw, r.fingerprint);
  let sealed = Buffer.alloc(0);
  let flags = (keyRaw ? KEY_RAW : 0) | (fpRaw ? FINGERPRINT_RAW : 0);
  // A record with no answer field at all is held as one that kept none (the route runs again on a repeat).
  if (r.sealed !== null && r.sealed !== undefined) {
    flags |= SEALED;
    const raw = Buffer.from(r.sealed, 'base64');
    if (raw.toString('base64') === r.sealed) {
      flags |= SEALED_RAW;
      sealed = raw;
    } else sealed = Buffer.from(r.sealed, 'utf8');
  }
  const ms = Date.parse(r.createdAt);
  const dateText = !(Number.isFinite(ms) && new Date(ms).toISOString() === r.createdAt);
  const date = dateText ? Buffer.from(r.createdAt, 'utf8') : Buffer.alloc(0);
  if (dateText) flags |= DATE_TEXT;
  const length = HEAD + 2 + key.length + 2 + fp.length + 4 + sealed.length + (dateText ? 2 + date.length : 0);
  const buf = Buffer.allocUnsafe(length);
  let at = buf.writeUInt32LE(length, 0);
  at = buf.writeUInt8(flags, at);
  at = buf.writeUInt16LE(r.status, at);
  at = buf.writeDoubleLE(dateText ? ms || 0 : ms, at);
  for (const part of [key, fp]) {
    at = buf.writeUInt16LE(part.length, at);
    at += part.copy(buf, at);
  }
  at = buf.writeUInt32LE(sealed.length, at);
  at += sealed.copy(buf, at);
  if (dateText) {
    at = buf.writeUInt16LE(date.length, at);
    date.copy(buf, at);
  }
  return buf;
}

/** The record at `at` in `buf`. */
function decode(buf: Buffer, at: number): IdempotencyRecord {
  const flags = buf[at + 4]!;
  const status = buf.readUInt16LE(at + 5);
  const ms = buf.readDoubleLE(at + 7);
  let p = at + HEAD;
  const part = (raw: boolean) => {
    const n = buf.readUInt16LE(p);
    const s = buf.toString(raw ? 'hex' : 'utf8', p + 2, p + 2 + n);
    p += 2 + n;
    return s;
  };
  const keyHash = part((flags & KEY_RAW) !== 0);
  const fingerprint = part((flags & FINGERPRINT_RAW) !== 0);
  const n = buf.readUInt32LE(p);
  const sealed = flags & SEALED ? buf.toString(flags & SEALED_RAW ? 'base64' : 'utf8', p + 4, p + 4 + n) : null;
  p += 4 + n;
  const createdAt = flags & DATE_TEXT ? part(false) : new Date(ms).toISOString();
  return { keyHash, fingerprint, status, sealed, createdAt };
}

/** The key of the record at `at`, without decoding the rest. */
function keyAt(buf: Buffer, at: number): string {
  const n = buf.readUInt16LE(at + HEAD);
  return buf.toString(buf[at + 4]! & KEY_RAW ? 'hex' : 'utf8', at + HEAD + 2, at + HEAD + 2 + n);
}

/** When the record at `at` was made, in ms, without decoding the rest. */
const createdAt = (buf: Buffer, at: number): number =>
  buf[at + 4]! & DATE_TEXT ? Date.parse(decode(buf, at).createdAt) : buf.readDoubleLE(at + 7);

/**
 * The idempotency records of an embedded store, oldest first, by key. `bytes` is what they hold:
 * the chunks as allocated and the table, counted exactly (the few objects around them aside).
 */
export class IdempotencyRecords {
  /** Chunks from `#first` on; each with the bytes used in it. */
  #chunks: Buffer[] = [];
  #used: number[] = [];
  #first = 0;
  /** Where the oldest record that may be live starts. */
  #head = 0;
  #hashes = new Uint32Array(64);
  /** A position, EMPTY, or GONE (a removed entry, which a probe steps over). */
  #places = new Float64Array(64).fill(EMPTY);
  #size = 0;
  #gone = 0;
  #chunkBytes = 0;

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#chunkBytes + this.#hashes.byteLength + this.#places.byteLength;
  }

  #locate(place: number): { buf: Buffer; at: number } {
    return { buf: this.#chunks[Math.floor(place / SPAN) - this.#first]!, at: place % SPAN };
  }

  /** The slot of `key` in the table, or -1. */
  #slotOf(key: string, hash: number): number {
    const mask = this.#places.length - 1;
    for (let i = hash & mask; this.#places[i] !== EMPTY; i = (i + 1) & mask) {
      if (this.#places[i] === GONE || this.#hashes[i] !== hash) continue;
      const { buf, at } = this.#locate(this.#places[i]!);
      if (keyAt(buf, at) === key) return i;
    }
    return -1;
  }

  get(key: string): IdempotencyRecord | undefined {
    const slot = this.#slotOf(key, hashOf(key));
    if (slot === -1) return undefined;
    const { buf, at } = this.#locate(this.#places[slot]!);
    return decode(buf, at);
  }

  /** Stores a record, replacing (and moving to the newest end) any record of its key. */
  set(r: IdempotencyRecord): void {
    const hash = hashOf(r.keyHash);
    const old = this.#slotOf(r.keyHash, hash);
    if (old !== -1) this.#remove(old);
    const place = this.#append(encode(r));
    if ((this.#size + this.#gone + 1) * 2 > this.#places.length) this.#rehash();
    const mask = this.#places.length - 1;
    let i = hash & mask;
    while (this.#places[i]! >= 0) i = (i + 1) & mask;
    if (this.#places[i] === GONE) this.#gone--;
    this.#hashes[i] = hash;
    this.#places[i] = place;
    this.#size++;
  }

  /** Marks the record in `slot` dead and frees the slot. */
  #remove(slot: number): void {
    const { buf, at } = this.#locate(this.#places[slot]!);
    buf[at + 4] = buf[at + 4]! | DEAD;
    this.#places[slot] = GONE;
    this.#size--;
    this.#gone++;
  }

  #append(record: Buffer): number {
    let last = this.#chunks.length - 1;
    if (last === -1 || this.#used[last]! + record.length > this.#chunks[last]!.length) {
      const size = Math.max(
        record.length,
        Math.min(LAST_CHUNK, last === -1 ? FIRST_CHUNK : 2 * this.#chunks[last]!.length),
      );
      // Outside the heap, and not from Buffer's shared pool (a small chunk would hold a pool slab).
      this.#chunks.push(Buffer.allocUnsafeSlow(size));
      this.#used.push(0);
      this.#chunkBytes += size;
      last++;
    }
    const at = this.#used[last]!;
    record.copy(this.#chunks[last]!, at);
    this.#used[last] = at + record.length;
    return (this.#first + last) * SPAN + at;
  }

  #rehash(): void {
    const places = this.#places;
    const hashes = this.#hashes;
    let slots = 64;
    while ((this.#size + 1) * 4 > slots) slots *= 2;
    this.#hashes = new Uint32Array(slots);
    this.#places = new Float64Array(slots).fill(EMPTY);
    this.#gone = 0;
    const mask = slots - 1;
    for (let j = 0; j < places.length; j++) {
      if (places[j]! < 0) continue;
      let i = hashes[j]! & mask;
      while (this.#places[i] !== EMPTY) i = (i + 1) & mask;
      this.#hashes[i] = hashes[j]!;
      this.#places[i] = places[j]!;
    }
  }

  /** Every live record, oldest first, decoded one at a time. */
  *values(): Generator<IdempotencyRecord> {
    for (const { buf, at } of this.#walk()) if (!(buf[at + 4]! & DEAD)) yield decode(buf, at);
  }

  /**
   * The records live and younger than `ttl` at `now`, as they are now, for a snapshot written while
   * writes go on: their positions, and the chunks they are in (kept even if a prune drops them
   * meanwhile; a record's bytes never change but for its flags), decoded one at a time.
   */
  view(now: number, ttl: number): Iterable<IdempotencyRecord> & { readonly length: number } {
    const places: number[] = [];
    for (const { buf, at, place } of this.#walk()) {
      if (buf[at + 4]! & DEAD) continue;
      if (now - createdAt(buf, at) < ttl) places.push(place);
    }
    const chunks = [...this.#chunks];
    const first = this.#first;
    return {
      length: places.length,
      *[Symbol.iterator]() {
        for (const place of places) yield decode(chunks[Math.floor(place / SPAN) - first]!, place % SPAN);
      },
    };
  }

  /** Every record from the head on (dead ones too), with its position. */
  *#walk(): Generator<{ buf: Buffer; at: number; place: number }> {
    let place = this.#head;
    for (;;) {
      const c = Math.floor(place / SPAN) - this.#first;
      if (c >= this.#chunks.length) return;
      const at = place % SPAN;
      if (at >= this.#used[c]!) {
        place = (this.#first + c + 1) * SPAN;
        continue;
      }
      const buf = this.#chunks[c]!;
      yield { buf, at, place };
      place += buf.readUInt32LE(at);
    }
  }

  /**
   * Forgets records made `ttl` or longer before `now`, oldest first, stopping at the first record
   * still young; drops the chunks left behind. How many live records went.
   */
  prune(now: number, ttl: number): number {
    let pruned = 0;
    let head = this.#head;
    for (const { buf, at, place } of this.#walk()) {
      head = place;
      if (!(buf[at + 4]! & DEAD)) {
        if (now - createdAt(buf, at) < ttl) break;
        const key = keyAt(buf, at);
        this.#remove(this.#slotOf(key, hashOf(key)));
        pruned++;
      }
      head = place + buf.readUInt32LE(at);
    }
    this.#head = head;
    // Chunks wholly before the head, and the last one too once nothing lives in it.
    while (this.#chunks.length > 0 && (this.#first + 1) * SPAN <= this.#head) this.#dropFirst();
    if (this.#size === 0) {
      while (this.#chunks.length > 0) this.#dropFirst();
      this.#head = this.#first * SPAN;
    }
    if (this.#gone > this.#size && this.#places.length > 64) this.#rehash();
    return pruned;
  }

  #dropFirst(): void {
    this.#chunkBytes -= this.#chunks.shift()!.length;
    this.#used.shift();
    this.#first++;
  }
}
