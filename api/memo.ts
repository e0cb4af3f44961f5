/**
 * Remembers an answer in a memo that holds at most `max` entries. A full memo is cleared whole
 * before the next answer goes in: a flood of distinct keys costs one refill of what repeats, never
 * memory past the bound, and a hit costs one Map lookup with no recency to keep (an LRU's
 * bookkeeping cost more than the answers these memos hold are worth).
 */
export function remember<K, V>(memo: Map<K, V>, max: number, key: K, value: V): V {
  if (memo.size >= max) memo.clear();
  memo.set(key, value);
  return value;
}
