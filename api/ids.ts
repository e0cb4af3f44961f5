import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

// Drawing from the CSPRNG costs about 2 µs a call whatever the size (uuid's own v7 draws 16 bytes
// from WebCrypto per id), so one draw of 4 KiB serves many ids and passports, as Node's randomUUID
// does. Bytes are handed out once and never reused.
const pool = new Uint8Array(4096);
let offset = pool.length;

/** `n` (at most 4096) fresh random bytes. */
export function randomBytes(n: number): Uint8Array {
  // A larger request would silently get fewer bytes than it asked for.
  if (n > pool.length) throw new RangeError(`at most ${pool.length} random bytes at a time`);
  if (offset + n > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  return pool.subarray(offset, (offset += n));
}

// The time and sequence are kept as uuid keeps them, so ids made in one millisecond still sort in
// the order they were made.
const state = { msecs: -Infinity, seq: 0 };

/** A new UUIDv7: sortable by creation, unique. */
export function newId(): string {
  const random = randomBytes(16);
  const now = Date.now();
  if (now > state.msecs) {
    state.msecs = now;
    state.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    state.seq = (state.seq + 1) | 0;
    if (state.seq === 0) state.msecs++;
  }
  return v7({ random, msecs: state.msecs, seq: state.seq });
}

/**
 * An id as this service writes them (lowercase, 8-4-4-4-12 hex). Client-sent ids are checked with
 * it before a store sees them: PostgreSQL's uuid type refuses anything else with an error (a 500),
 * and takes spellings (upper case, braces, no dashes) the embedded store would not find.
 */
export const isId = (id: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id);
