import { leafHash, nodeHash, rootOf } from './merkle.ts';

/**
 * An append-only RFC 9162 tree kept in memory: leaf hashes are computed once, and the roots of
 * complete power-of-two subtrees (which never change again) are cached, so a root or a proof
 * costs O(log n) hashes instead of rehashing the whole log.
 */
export class MerkleLog {
  #leaves: Buffer[] = [];
  #complete = new Map<string, Buffer>();

  get size(): number {
    return this.#leaves.length;
  }

  /**
   * Adds the entries at positions `start`, `start + 1`, ... of the log, skipping those it already
   * holds (two requests may fetch the same new entries at once).
   */
  appendFrom(start: number, data: string[]): void {
    if (start > this.#leaves.length) throw new RangeError('entries are missing before this position');
    for (let i = this.#leaves.length - start; i < data.length; i++)
      this.#leaves.push(leafHash(Buffer.from(data[i]!, 'utf8')));
  }

  /** MTH of leaves [start, start + n). */
  #root(start: number, n: number): Buffer {
    if (n === 0) return rootOf([]);
    if (n === 1) return this.#leaves[start]!;
    const isComplete = (n & (n - 1)) === 0;
    const key = `${start}:${n}`;
    if (isComplete) {
      const cached = this.#complete.get(key);
      if (cached) return cached;
    }
    const k = 2 ** Math.floor(Math.log2(n - 1));
    const root = nodeHash(this.#root(start, k), this.#root(start + k, n - k));
    if (isComplete) this.#complete.set(key, root);
    return root;
  }

  root(size = this.size): Buffer {
    return this.#root(0, size);
  }

  /** PATH(m, D[size]) using cached subtree roots. */
  inclusion(m: number, size = this.size): Buffer[] {
    if (m < 0 || m >= size) throw new RangeError('leaf index out of range');
    const path = (m: number, start: number, n: number): Buffer[] => {
      if (n === 1) return [];
      const k = 2 ** Math.floor(Math.log2(n - 1));
      return m < k
        ? [...path(m, start, k), this.#root(start + k, n - k)]
        : [...path(m - k, start + k, n - k), this.#root(start, k)];
    };
    return path(m, 0, size);
  }

  /**
   * PROOF(m, D[size]) (RFC 9162 2.1.4.1) using cached subtree roots: O(log n) nodes, each the root
   * of a subtree that is either cached or made of cached complete subtrees.
   */
  consistency(m: number, size = this.size): Buffer[] {
    if (m < 1 || m > size || size > this.size) throw new RangeError('sizes out of range');
    const sub = (m: number, start: number, n: number, complete: boolean): Buffer[] => {
      if (m === n) return complete ? [] : [this.#root(start, n)];
      const k = 2 ** Math.floor(Math.log2(n - 1));
      return m <= k
        ? [...sub(m, start, k, complete), this.#root(start + k, n - k)]
        : [...sub(m - k, start + k, n - k, false), this.#root(start, k)];
    };
    return sub(m, 0, size, true);
  }
}
