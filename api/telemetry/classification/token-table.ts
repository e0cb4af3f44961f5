import { tokenHash } from './tokens.ts';

/**
 * A fixed map from words to values, asked with a range of a string's characters and its hash
 * (tokens.ts reads it in the scan that finds the token): no substring is made and V8 hashes no new
 * string. Slicing each product token out of a User-Agent and asking a Map for it (a new string, its
 * hash, the Map's probe) was over a third of classifying a browser's string. Open addressing; equal
 * text finds the same value whatever string holds it.
 */
export interface TokenTable<V> {
  /** The value of the word s[start, end), if the table holds it; hash is tokenHash(s, start, end). */
  get(s: string, start: number, end: number, hash?: number): V | undefined;
}

/** A table of a map's words and values. */
export function createTokenTable<V>(map: ReadonlyMap<string, V>): TokenTable<V> {
  const words = [...map.keys()];
  const values = [...map.values()];
  // At most a quarter full: a word the table does not hold mostly meets an empty slot at once.
  const bits = Math.max(4, Math.ceil(Math.log2(words.length * 4)));
  const mask = (1 << bits) - 1;
  /** Each slot's word index + 1; 0 is empty. */
  const slots = new Int32Array(1 << bits);
  const hashes = new Int32Array(words.length);
  words.forEach((word, k) => {
    const h = tokenHash(word, 0, word.length);
    hashes[k] = h;
    let at = h & mask;
    while (slots[at] !== 0) at = (at + 1) & mask;
    slots[at] = k + 1;
  });
  const sameText = (word: string, s: string, start: number, end: number) =>
    word.length === end - start && s.startsWith(word, start);
  return {
    get(s, start, end, hash = tokenHash(s, start, end)) {
      for (let at = hash & mask; ; at = (at + 1) & mask) {
        const k = slots[at]! - 1;
        if (k < 0) return undefined;
        if (hashes[k] === hash && sameText(words[k]!, s, start, end)) return values[k];
      }
    },
  };
}
