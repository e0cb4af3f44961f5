import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

// uuid's own v7 draws 16 bytes from WebCrypto per id (2 µs, the most of a score's id); one draw of
// 4 KiB serves 256 ids. The time and sequence are kept here as uuid keeps them, so ids made in the
// same millisecond still sort in the order they were made.
const pool = new Uint8Array(16 * 256);
let offset = pool.length;
const state = { msecs: -Infinity, seq: 0 };

/** A new UUIDv7: sortable by creation, unique. */
export function newId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const random = pool.subarray(offset, (offset += 16));
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
