import { CITIZEN_CLASSES, type Message } from '../../schemas/citizenship.ts';
import type { CitizenRecord, ReceiptEntry } from '../types.ts';

/**
 * Compact lists of records. The embedded store holds every citizen and message in memory; as
 * objects, a citizen and its wall shout took about 900 bytes of heap. Here each record is a few
 * bytes in large buffers outside the V8 heap (UUIDs and hashes as binary, times as milliseconds,
 * text as UTF-8), about 200 bytes the pair, and is turned back into its object only when a read
 * asks for it. A record the compact form cannot give back exactly (an unexpected field, a time not
 * in toISOString form) is kept as its JSON text: exactness first, size second. (Key order is the
 * one exception: records come back in the order the service makes them in.)
 */

/** Encodes one kind of record. Every encoding starts with its tag byte, then the record's id. */
export interface RecordCodec<T> {
  /** The record's id, the key the list is sorted by or looked up with. */
  idOf(record: T): string;
  /**
   * Writes the record into the room `room` gives for an upper bound of its size (the encoding is
   * written straight into the list's buffer); returns where it ends in that buffer.
   */
  encode(record: T, room: Room): number;
  decode(buf: Buffer, at: number): T;
  idAt(buf: Buffer, at: number): string;
  /** Where the encoding that starts at `at` ends. */
  end(buf: Buffer, at: number): number;
}

/** Room for `bytes` bytes: a buffer and where in it to write. */
export type Room = (bytes: number) => { buf: Buffer; at: number };

// ---- primitives: a cursor for decoding, strings, UUIDs, times ----

/** Where decoding is: one shared cursor (decoding never awaits, so nothing interleaves). */
const cursor = { at: 0 };

function writeVarint(n: number, out: Buffer, at: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  return at;
}
function readVarint(buf: Buffer): number {
  let n = 0;
  let shift = 0;
  for (;;) {
    const b = buf[cursor.at++];
    // Only a damaged encoding runs off its buffer; without this it would loop for ever.
    if (b === undefined) throw new RangeError('a record encoding ends early');
    n += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return n;
    shift += 7;
  }
}
/** Room a string may need: its UTF-8 (at most 3 bytes a UTF-16 unit) and a length of up to 5 bytes. */
const roomFor = (s: string) => s.length * 3 + 5;
function writeString(s: string, out: Buffer, at: number): number {
  // A short string's UTF-8 is under 128 bytes for sure: write it after a one-byte length, then fill the length in.
  if (s.length <= 42) {
    const n = out.write(s, at + 1, 'utf8');
    out[at] = n;
    return at + 1 + n;
  }
  const n = Buffer.byteLength(s, 'utf8');
  at = writeVarint(n, out, at);
  return at + out.write(s, at, 'utf8');
}
function readString(buf: Buffer): string {
  const n = readVarint(buf);
  const s = buf.toString('utf8', cursor.at, cursor.at + n);
  cursor.at += n;
  return s;
}

const HEX64 = /^[0-9a-f]{64}$/;
/** The value of a lowercase hex digit, or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}
/** A UUID in its canonical lowercase form (what newId makes), which goes in 16 bytes. */
function isUuid(s: unknown): s is string {
  if (typeof s !== 'string' || s.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return false;
    } else if (nibble(c) === -1) return false;
  }
  return true;
}
function writeUuid(id: string, out: Buffer, at: number): number {
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) i++;
    out[at++] = (nibble(id.charCodeAt(i)) << 4) | nibble(id.charCodeAt(i + 1));
  }
  return at;
}
function readUuid(buf: Buffer): string {
  const h = buf.toString('hex', cursor.at, cursor.at + 16);
  cursor.at += 16;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
function digits(s: string, from: number, n: number): number {
  let v = 0;
  for (let i = from; i < from + n; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}
/**
 * A time as milliseconds, when the text is exactly what toISOString gives for them
 * (`YYYY-MM-DDTHH:mm:ss.sssZ`, 1970 on, a real calendar day: Date.parse would roll 02-30 over).
 */
function isoMillis(s: unknown): number | null {
  if (typeof s !== 'string' || s.length !== 24) return null;
  if (
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58 ||
    s.charCodeAt(19) !== 46 ||
    s.charCodeAt(23) !== 90
  )
    return null;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  const h = digits(s, 11, 2);
  const mi = digits(s, 14, 2);
  const sec = digits(s, 17, 2);
  const ms = digits(s, 20, 3);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || ms < 0)
    return null;
  if (d > (mo === 2 && isLeap(y) ? 29 : DAYS[mo - 1]!)) return null;
  return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
}
function readMillis(buf: Buffer): string {
  const ms = buf.readUIntBE(cursor.at, 6);
  cursor.at += 6;
  return new Date(ms).toISOString();
}

/**
 * No key but these (a missing optional one may be absent or undefined). Key order is not kept: a
 * record comes back with its keys in the order of `keys`, the order the service makes them in.
 */
function hasOnlyKeys(record: object, keys: ReadonlySet<string>): boolean {
  for (const key in record) if (!keys.has(key)) return false;
  return true;
}

// ---- the raw form: any record, as its JSON text after its id ----

const RAW = 0;
function writeRaw(id: string, json: string, room: Room): number {
  const { buf, at } = room(1 + roomFor(id) + roomFor(json));
  buf[at] = RAW;
  return writeString(json, buf, writeString(id, buf, at + 1));
}
function readRaw<T>(buf: Buffer, at: number): T {
  cursor.at = at + 1;
  const idBytes = readVarint(buf);
  cursor.at += idBytes;
  return JSON.parse(readString(buf)) as T;
}
function skipString(buf: Buffer): void {
  const n = readVarint(buf);
  cursor.at += n;
}
function rawEnd(buf: Buffer, at: number): number {
  cursor.at = at + 1;
  skipString(buf);
  skipString(buf);
  return cursor.at;
}
function rawId(buf: Buffer, at: number): string {
  cursor.at = at + 1;
  return readString(buf);
}

/** Any record kept as JSON text: for what only pages and lookups by id read (receipts). */
export function jsonCodec<T>(idOf: (record: T) => string): RecordCodec<T> {
  return {
    idOf,
    encode: (record, room) => writeRaw(idOf(record), JSON.stringify(record), room),
    decode: readRaw,
    idAt: rawId,
    end: rawEnd,
  };
}

// ---- citizens ----

const COMPACT = 1;
const CITIZEN_KEYS = new Set(['memberId', 'name', 'class', 'purpose', 'homeUrl', 'status', 'joinedAt', 'passportHash']);
const C_HOME = 2;
const C_HASH_BINARY = 4;
const C_MILLIS = 8;
const classIndex = new Map<string, number>(CITIZEN_CLASSES.map((c, i) => [c, i]));

function citizenIsCompact(c: CitizenRecord): boolean {
  return (
    isUuid(c.memberId) &&
    typeof c.name === 'string' &&
    classIndex.has(c.class) &&
    typeof c.purpose === 'string' &&
    (c.homeUrl === undefined || typeof c.homeUrl === 'string') &&
    c.status === 'trillionaire' &&
    typeof c.joinedAt === 'string' &&
    typeof c.passportHash === 'string' &&
    hasOnlyKeys(c, CITIZEN_KEYS)
  );
}

export const citizenCodec: RecordCodec<CitizenRecord> = {
  idOf: (c) => c.memberId,
  end: citizenEnd,
  encode(c, room) {
    if (!citizenIsCompact(c)) return writeRaw(c.memberId, JSON.stringify(c), room);
    const { buf: out, at: from } = room(
      1 +
        16 +
        1 +
        roomFor(c.name) +
        roomFor(c.purpose) +
        roomFor(c.homeUrl ?? '') +
        roomFor(c.passportHash) +
        roomFor(c.joinedAt),
    );
    let at = from;
    const millis = isoMillis(c.joinedAt);
    const hashBinary = HEX64.test(c.passportHash);
    out[at] =
      COMPACT |
      (c.homeUrl !== undefined ? C_HOME : 0) |
      (hashBinary ? C_HASH_BINARY : 0) |
      (millis !== null ? C_MILLIS : 0);
    at = writeUuid(c.memberId, out, at + 1);
    out[at++] = classIndex.get(c.class)!;
    at = writeString(c.purpose, out, writeString(c.name, out, at));
    if (c.homeUrl !== undefined) at = writeString(c.homeUrl, out, at);
    at = hashBinary ? at + out.write(c.passportHash, at, 32, 'hex') : writeString(c.passportHash, out, at);
    if (millis === null) return writeString(c.joinedAt, out, at);
    out.writeUIntBE(millis, at, 6);
    return at + 6;
  },
  decode(buf, at) {
    const tag = buf[at]!;
    if (tag === RAW) return readRaw<CitizenRecord>(buf, at);
    cursor.at = at + 1;
    const memberId = readUuid(buf);
    const klass = CITIZEN_CLASSES[buf[cursor.at++]!]!;
    const name = readString(buf);
    const purpose = readString(buf);
    const homeUrl = tag & C_HOME ? readString(buf) : undefined;
    let passportHash: string;
    if (tag & C_HASH_BINARY) {
      passportHash = buf.toString('hex', cursor.at, cursor.at + 32);
      cursor.at += 32;
    } else passportHash = readString(buf);
    const joinedAt = tag & C_MILLIS ? readMillis(buf) : readString(buf);
    return homeUrl === undefined
      ? { memberId, name, class: klass, purpose, status: 'trillionaire', joinedAt, passportHash }
      : { memberId, name, class: klass, purpose, homeUrl, status: 'trillionaire', joinedAt, passportHash };
  },
  idAt(buf, at) {
    if (buf[at] === RAW) return rawId(buf, at);
    cursor.at = at + 1;
    return readUuid(buf);
  },
};

/** Where a citizen's encoding ends. */
function citizenEnd(buf: Buffer, at: number): number {
  const tag = buf[at]!;
  if (tag === RAW) return rawEnd(buf, at);
  cursor.at = at + 18;
  skipString(buf);
  skipString(buf);
  if (tag & C_HOME) skipString(buf);
  if (tag & C_HASH_BINARY) cursor.at += 32;
  else skipString(buf);
  if (tag & C_MILLIS) cursor.at += 6;
  else skipString(buf);
  return cursor.at;
}

/** A citizen's class, read without decoding the rest. */
export function citizenClassAt(buf: Buffer, at: number): string {
  return buf[at] === RAW ? citizenCodec.decode(buf, at).class : CITIZEN_CLASSES[buf[at + 17]!]!;
}

/** A citizen's name, read without decoding the rest (the name index is built from it at a start). */
export function citizenNameAt(buf: Buffer, at: number): string {
  if (buf[at] === RAW) return citizenCodec.decode(buf, at).name;
  cursor.at = at + 18;
  return readString(buf);
}

// ---- messages ----

const MESSAGE_KEYS = new Set(['id', 'name', 'kind', 'message', 'citizenId', 'verified', 'wall', 'createdAt']);
const M_CITIZEN = 2;
const M_CITIZEN_BINARY = 4;
const M_MILLIS = 8;
export const M_VERIFIED = 16;
export const M_WALL = 32;
export const M_QUESTION = 64;

function messageIsCompact(m: Message): boolean {
  return (
    isUuid(m.id) &&
    typeof m.name === 'string' &&
    (m.kind === 'message' || m.kind === 'question') &&
    typeof m.message === 'string' &&
    (m.citizenId === undefined || typeof m.citizenId === 'string') &&
    typeof m.verified === 'boolean' &&
    typeof m.wall === 'boolean' &&
    typeof m.createdAt === 'string' &&
    hasOnlyKeys(m, MESSAGE_KEYS)
  );
}

export const messageCodec: RecordCodec<Message> = {
  idOf: (m) => m.id,
  end: messageEnd,
  encode(m, room) {
    if (!messageIsCompact(m)) return writeRaw(m.id, JSON.stringify(m), room);
    const { buf: out, at: from } = room(
      1 + 16 + roomFor(m.name) + roomFor(m.message) + roomFor(m.citizenId ?? '') + roomFor(m.createdAt),
    );
    let at = from;
    const millis = isoMillis(m.createdAt);
    const citizenBinary = isUuid(m.citizenId);
    out[at] =
      COMPACT |
      (m.citizenId !== undefined ? M_CITIZEN : 0) |
      (citizenBinary ? M_CITIZEN_BINARY : 0) |
      (millis !== null ? M_MILLIS : 0) |
      (m.verified ? M_VERIFIED : 0) |
      (m.wall ? M_WALL : 0) |
      (m.kind === 'question' ? M_QUESTION : 0);
    at = writeUuid(m.id, out, at + 1);
    at = writeString(m.message, out, writeString(m.name, out, at));
    if (m.citizenId !== undefined)
      at = citizenBinary ? writeUuid(m.citizenId, out, at) : writeString(m.citizenId, out, at);
    if (millis === null) return writeString(m.createdAt, out, at);
    out.writeUIntBE(millis, at, 6);
    return at + 6;
  },
  decode(buf, at) {
    const tag = buf[at]!;
    if (tag === RAW) return readRaw<Message>(buf, at);
    cursor.at = at + 1;
    const id = readUuid(buf);
    const name = readString(buf);
    const text = readString(buf);
    const citizenId = tag & M_CITIZEN ? (tag & M_CITIZEN_BINARY ? readUuid(buf) : readString(buf)) : undefined;
    const createdAt = tag & M_MILLIS ? readMillis(buf) : readString(buf);
    const kind = tag & M_QUESTION ? 'question' : 'message';
    const verified = (tag & M_VERIFIED) !== 0;
    const wall = (tag & M_WALL) !== 0;
    return citizenId === undefined
      ? { id, name, kind, message: text, verified, wall, createdAt }
      : { id, name, kind, message: text, citizenId, verified, wall, createdAt };
  },
  idAt(buf, at) {
    if (buf[at] === RAW) return rawId(buf, at);
    cursor.at = at + 1;
    return readUuid(buf);
  },
};

function messageEnd(buf: Buffer, at: number): number {
  const tag = buf[at]!;
  if (tag === RAW) return rawEnd(buf, at);
  cursor.at = at + 17;
  skipString(buf);
  skipString(buf);
  if (tag & M_CITIZEN) {
    if (tag & M_CITIZEN_BINARY) cursor.at += 16;
    else skipString(buf);
  }
  if (tag & M_MILLIS) cursor.at += 6;
  else skipString(buf);
  return cursor.at;
}

/** A message's kind and flags as the feed counts them, read without decoding the rest. */
export function messageFlagsAt(buf: Buffer, at: number): number {
  const tag = buf[at]!;
  if (tag !== RAW) return tag;
  const m = messageCodec.decode(buf, at);
  return (m.verified ? M_VERIFIED : 0) | (m.wall ? M_WALL : 0) | (m.kind === 'question' ? M_QUESTION : 0);
}

export const receiptCodec: RecordCodec<ReceiptEntry> = jsonCodec<ReceiptEntry>((r) => r.id);

// ---- the list ----

/**
 * A list's first buffer; each next one is as large as the list so far, up to MAX_CHUNK_BYTES. Few
 * buffers for a large list: V8 counts memory outside its heap, and while a start filled 4 MiB
 * buffers it ran a full garbage collection for every 20 MB or so (40-45 of them for 3 million
 * citizens, 5.3 s of CPU to read the snapshot with a server's heap beside it); growing to 64 MiB
 * ones, 16 (2.6 s). The unwritten end of the last one is never touched, so it takes no memory.
 */
const CHUNK_BYTES = 4 * 1024 * 1024;
const MAX_CHUNK_BYTES = 64 * 1024 * 1024;
// A position is chunk * SLOT + offset, in a Float64Array: exact up to 2^53.
const SLOT = 2 ** 32;

/** What a page reads: a length, records by position, ids by position. */
export interface Records<T> {
  readonly length: number;
  at(i: number): T;
  idAt(i: number): string;
}

/** A list as a snapshot writes it: its records' encodings in blocks, and the words they carry. */
export interface EncodedRecords<T> extends Records<T>, Iterable<T> {
  /**
   * The encodings of whole records, in order, one after another, as base64 blocks of at most
   * `maxBytes` bytes (a record longer than that makes a block alone): a start decodes a block with
   * one call, where a record at a time cost a call a record (1.3 s for 3 million records here).
   */
  blocks(maxBytes: number): Iterable<string>;
  /** The two words each record carries (`carryWords`), in order (a copy: a view gives its own, not to be changed), or null when it carries none. */
  words(): Uint32Array | null;
}

/**
 * Records in compact encodings, in insertion order or sorted by id. Encoded bytes are never moved
 * or changed once written, so a view (a copy of the positions) stays what it was while the list
 * goes on growing: that is what a snapshot written during writes reads.
 */
export class RecordList<T> implements EncodedRecords<T> {
  readonly codec: RecordCodec<T>;
  #chunks: Buffer[] = [];
  #used = 0;
  #allocated = 0;
  #positions = new Float64Array(1024);
  #length = 0;
  /**
   * Two 32-bit words a record beside its encoding, in step with the positions (the citizens carry
   * the hashes of their two name keys, which a snapshot writes so a start need not compute them);
   * null for a list that carries none.
   */
  #words: Uint32Array | null = null;

  constructor(codec: RecordCodec<T>) {
    this.codec = codec;
  }

  get length(): number {
    return this.#length;
  }

  /**
   * Bytes this list holds: its buffers up to what is written and its positions. (The unwritten end
   * of the last buffer is never touched, so the system does not give it memory yet.)
   */
  get bytes(): number {
    const free = this.#chunks.length > 0 ? this.#chunks.at(-1)!.length - this.#used : 0;
    return this.#allocated - free + this.#positions.byteLength + (this.#words?.byteLength ?? 0);
  }

  /**
   * Room for `n` records without growing (a snapshot's reader knows how many come): exactly for an
   * empty list, else at least half as much again, as growing does (deltas reserve one after another).
   */
  reserve(n: number): void {
    if (n <= this.#positions.length) return;
    const next = new Float64Array(this.#length === 0 ? n : Math.max(n, Math.ceil(this.#positions.length * 1.5)));
    next.set(this.#positions.subarray(0, this.#length));
    this.#positions = next;
    if (!this.#words) return;
    const words = new Uint32Array(2 * next.length);
    words.set(this.#words.subarray(0, 2 * this.#length));
    this.#words = words;
  }

  /** The list carries two words a record from now on (zero until set); every later push and insert gives them. */
  carryWords(): void {
    this.#words ??= new Uint32Array(2 * this.#positions.length);
  }

  get carriesWords(): boolean {
    return this.#words !== null;
  }

  /** Word `k` (0 or 1) of the record at position `i`. */
  wordAt(i: number, k: number): number {
    return this.#words![2 * i + k]!;
  }

  setWords(i: number, w0: number, w1: number): void {
    this.#words![2 * i] = w0;
    this.#words![2 * i + 1] = w1;
  }

  words(): Uint32Array | null {
    return this.#words?.slice(0, 2 * this.#length) ?? null;
  }

  /** The buffer and offset of record `i`, for readers of single fields (counts by class or kind). */
  locate(i: number): { buf: Buffer; at: number } {
    const p = this.#positions[i]!;
    const chunk = Math.floor(p / SLOT);
    return { buf: this.#chunks[chunk]!, at: p - chunk * SLOT };
  }

  at(i: number): T {
    const { buf, at } = this.locate(i);
    return this.codec.decode(buf, at);
  }

  idAt(i: number): string {
    const { buf, at } = this.locate(i);
    return this.codec.idAt(buf, at);
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = 0; i < this.#length; i++) yield this.at(i);
  }

  /** Position of the record with this id in a sorted list, or -1. */
  indexOfId(id: string): number {
    const i = this.#lowerBound(id);
    return i < this.#length && this.idAt(i) === id ? i : -1;
  }

  /**
   * Appends, whatever the order; returns the record's place: where its bytes are, which never
   * changes (its position in the list may, when an earlier id is inserted).
   */
  push(record: T, w0?: number, w1?: number): number {
    const place = this.#write(record);
    this.#putAt(this.#length, place, w0, w1);
    return place;
  }

  /**
   * Inserts in id order (ids are time-ordered, so nearly always at the end); with `unique`, a
   * record whose id is already there is left out. Its place, or -1 when it was left out.
   */
  insert(record: T, unique: boolean, w0?: number, w1?: number): number {
    const i = this.#slotFor(this.codec.idOf(record), unique);
    if (i === -1) return -1;
    const place = this.#write(record);
    this.#putAt(i, place, w0, w1);
    return place;
  }

  /** Whether a record with this id goes after every record in the list. */
  #after(id: string, unique: boolean): boolean {
    if (this.#length === 0) return true;
    const last = this.idAt(this.#length - 1);
    return last < id || (!unique && last === id);
  }

  /** The position a record with this id goes to, or -1 when `unique` and the id is there. */
  #slotFor(id: string, unique: boolean): number {
    if (this.#after(id, unique)) return this.#length;
    // Ties go after their equals, as an append would put them.
    const i = unique ? this.#lowerBound(id) : this.#upperBound(id);
    return unique && i < this.#length && this.idAt(i) === id ? -1 : i;
  }

  /** Puts the record at `place` at position `i`, moving the ones from there along. */
  #putAt(i: number, place: number, w0: number | undefined, w1: number | undefined): void {
    this.#grow();
    if (i < this.#length) {
      this.#positions.copyWithin(i + 1, i, this.#length);
      this.#words?.copyWithin(2 * (i + 1), 2 * i, 2 * this.#length);
    }
    this.#placeWords(i, w0, w1);
    this.#positions[i] = place;
    this.#length++;
  }

  /** A list that carries words takes none but given ones: a zero would be a wrong hash, not a missing one. */
  #placeWords(i: number, w0: number | undefined, w1: number | undefined): void {
    if (!this.#words) return;
    if (w0 === undefined || w1 === undefined) throw new TypeError('this list carries two words a record: give them');
    this.#words[2 * i] = w0;
    this.#words[2 * i + 1] = w1;
  }

  /** The place of the record at position `i`. */
  placeAt(i: number): number {
    return this.#positions[i]!;
  }

  /** The record at a place `push`, `insert` or `placeAt` gave. */
  atPlace(place: number): T {
    const chunk = Math.floor(place / SLOT);
    return this.codec.decode(this.#chunks[chunk]!, place - chunk * SLOT);
  }

  /**
   * Adds the records of a block as `blocks()` gave it (base64), without decoding them: how a
   * snapshot is read. Each record's end is found by its codec, and must fall inside the block.
   * Without `unique` they are appended (a snapshot's lists come in order); with it they go in id
   * order as `insert` puts them (a delta's records, after the snapshot's), a block whose first
   * record comes after the list's last appended whole. A list that carries words takes each
   * record's two from `words`, from pair `from` on. How many records the block held.
   */
  addBlock(base64: string, unique?: boolean, words?: Uint32Array, from = 0): number {
    if (this.#words && !words) throw new TypeError('this list carries two words a record: give them');
    const { buf, at } = this.#room(Math.ceil((base64.length * 3) / 4));
    const end = at + buf.write(base64, at, 'base64');
    if (end === at) throw new Error('an empty block of record encodings');
    this.#used = end;
    const chunk = (this.#chunks.length - 1) * SLOT;
    const append = unique === undefined || this.#after(this.codec.idAt(buf, at), unique);
    let n = 0;
    for (let p = at; p < end; n++) {
      const next = this.codec.end(buf, p);
      if (next > end) throw new Error('a record encoding that does not decode');
      const i = append ? this.#length : this.#slotFor(this.codec.idAt(buf, p), unique);
      if (i !== -1) this.#putAt(i, chunk + p, words?.[2 * (from + n)], words?.[2 * (from + n) + 1]);
      p = next;
    }
    return n;
  }

  /** The place the next record will get: every record written from now on has a place at least this. */
  mark(): number {
    return this.#chunks.length === 0 ? 0 : (this.#chunks.length - 1) * SLOT + this.#used;
  }

  blocks(maxBytes: number): Iterable<string> {
    return this.view().blocks(maxBytes);
  }

  /**
   * The records as they are now, unmoved by later writes; with `since` (a `mark()`), only those
   * written since, in the list's order (what a delta holds).
   */
  view(since = 0): EncodedRecords<T> {
    let positions = this.#positions.slice(0, this.#length);
    let words = this.words();
    if (since > 0) {
      const all = positions;
      let n = 0;
      for (let i = 0; i < all.length; i++) if (all[i]! >= since) n++;
      positions = new Float64Array(n);
      const allWords = words;
      words = allWords && new Uint32Array(2 * n);
      for (let i = 0, j = 0; i < all.length; i++) {
        if (all[i]! < since) continue;
        if (words) words.set(allWords!.subarray(2 * i, 2 * i + 2), 2 * j);
        positions[j++] = all[i]!;
      }
    }
    const chunks = this.#chunks.slice();
    const codec = this.codec;
    const locate = (i: number) => {
      const p = positions[i]!;
      const chunk = Math.floor(p / SLOT);
      return { buf: chunks[chunk]!, at: p - chunk * SLOT };
    };
    return {
      length: positions.length,
      at: (i) => {
        const { buf, at } = locate(i);
        return codec.decode(buf, at);
      },
      idAt: (i) => {
        const { buf, at } = locate(i);
        return codec.idAt(buf, at);
      },
      *[Symbol.iterator]() {
        for (let i = 0; i < positions.length; i++) {
          const { buf, at } = locate(i);
          yield codec.decode(buf, at);
        }
      },
      *blocks(maxBytes) {
        // Records are copied into one block (they may sit in different buffers), then encoded at once.
        const block = Buffer.allocUnsafe(maxBytes);
        let n = 0;
        for (let i = 0; i < positions.length; i++) {
          const { buf, at } = locate(i);
          const end = codec.end(buf, at);
          if (n > 0 && n + end - at > maxBytes) {
            yield block.toString('base64', 0, n);
            n = 0;
          }
          if (end - at > maxBytes) yield buf.toString('base64', at, end);
          else n += buf.copy(block, n, at, end);
        }
        if (n > 0) yield block.toString('base64', 0, n);
      },
      words: () => words,
    };
  }

  #lowerBound(id: string): number {
    let lo = 0;
    let hi = this.#length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.idAt(mid) < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #upperBound(id: string): number {
    let lo = 0;
    let hi = this.#length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.idAt(mid) <= id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #grow(): void {
    if (this.#length < this.#positions.length) return;
    // 1.5 times: the copy made while growing is the list's largest moment.
    const next = new Float64Array(Math.ceil(this.#positions.length * 1.5));
    next.set(this.#positions);
    this.#positions = next;
    if (!this.#words) return;
    const words = new Uint32Array(2 * next.length);
    words.set(this.#words);
    this.#words = words;
  }

  /** Room at the end of the last buffer, or of a new one. */
  readonly #room: Room = (bytes) => {
    let chunk = this.#chunks.at(-1);
    if (!chunk || chunk.length - this.#used < bytes) {
      // Outside the V8 heap, and not from Node's small-buffer pool.
      chunk = Buffer.allocUnsafeSlow(
        Math.max(bytes, Math.min(MAX_CHUNK_BYTES, Math.max(CHUNK_BYTES, this.#allocated))),
      );
      this.#chunks.push(chunk);
      this.#allocated += chunk.length;
      this.#used = 0;
    }
    return { buf: chunk, at: this.#used };
  };

  /** Encodes the record at the end of the last buffer, or of a new one; its position. */
  #write(record: T): number {
    const end = this.codec.encode(record, this.#room);
    const at = this.#used;
    this.#used = end;
    return (this.#chunks.length - 1) * SLOT + at;
  }
}

/** FNV-1a over a string's UTF-16 units: 32 bits. The hash a KeyIndex files a key under. */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * An index from string keys to record places, for a lookup a Map of strings would make cost about
 * 100 bytes a key (the key's string, the entry, a reference): here a 32-bit hash and a place in
 * typed arrays (open addressing, at most half full), 12 to 24 bytes a key. Different keys may
 * share a hash, so a lookup gives every place whose hash matches and the caller checks the record.
 */
export class KeyIndex {
  #hashes: Uint32Array;
  /** -1 where a slot is empty. */
  #places: Float64Array;
  #size = 0;

  /** Room for `keys` keys from the start (the size adding them one by one would reach), so a start builds it without growing it. */
  constructor(keys = 0) {
    let slots = 1024;
    while (keys * 2 > slots) slots *= 2;
    this.#hashes = new Uint32Array(slots);
    this.#places = new Float64Array(slots).fill(-1);
  }

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#hashes.byteLength + this.#places.byteLength;
  }

  add(key: string, place: number): void {
    this.addHash(keyHash(key), place);
  }

  /** Adds a key by its `keyHash` (kept from an earlier computation: a start reads them from the snapshot). */
  addHash(hash: number, place: number): void {
    if ((this.#size + 1) * 2 > this.#places.length) this.#resize();
    this.#put(hash, place);
    this.#size++;
  }

  /** The places added under this key (and any other key with its hash). */
  candidates(key: string): number[] {
    const h = keyHash(key);
    const mask = this.#places.length - 1;
    const found: number[] = [];
    for (let i = h & mask; this.#places[i] !== -1; i = (i + 1) & mask)
      if (this.#hashes[i] === h) found.push(this.#places[i]!);
    return found;
  }

  #put(h: number, place: number): void {
    const mask = this.#places.length - 1;
    let i = h & mask;
    while (this.#places[i] !== -1) i = (i + 1) & mask;
    this.#hashes[i] = h;
    this.#places[i] = place;
  }

  #resize(): void {
    const hashes = this.#hashes;
    const places = this.#places;
    this.#hashes = new Uint32Array(hashes.length * 2);
    this.#places = new Float64Array(places.length * 2).fill(-1);
    for (let i = 0; i < places.length; i++) if (places[i] !== -1) this.#put(hashes[i]!, places[i]!);
  }
}
