import { createHash } from 'node:crypto';

// RFC 9162 section 2.1: Merkle Tree Hash with domain-separated leaves and nodes.
const sha = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const LEAF = Buffer.from([0x00]);
const NODE = Buffer.from([0x01]);

export const leafHash = (data: Uint8Array): Buffer => sha(LEAF, data);
export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => sha(NODE, left, right);

/** The largest power of two smaller than n (n > 1). */
const split = (n: number) => 2 ** Math.floor(Math.log2(n - 1));

/** MTH over leaf hashes. */
export function rootOf(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return leaves[0]!;
  const k = split(leaves.length);
  return nodeHash(rootOf(leaves.slice(0, k)), rootOf(leaves.slice(k)));
}

/** PATH(m, D[n]): the inclusion proof of leaf m. */
export function inclusionProof(m: number, leaves: Buffer[]): Buffer[] {
  if (m < 0 || m >= leaves.length) throw new RangeError('leaf index out of range');
  if (leaves.length === 1) return [];
  const k = split(leaves.length);
  return m < k
    ? [...inclusionProof(m, leaves.slice(0, k)), rootOf(leaves.slice(k))]
    : [...inclusionProof(m - k, leaves.slice(k)), rootOf(leaves.slice(0, k))];
}

/** PROOF(m, D[n]): the consistency proof between the first m leaves and all n. */
export function consistencyProof(m: number, leaves: Buffer[]): Buffer[] {
  if (m < 1 || m > leaves.length) throw new RangeError('sizes out of range');
  const sub = (m: number, d: Buffer[], complete: boolean): Buffer[] => {
    if (m === d.length) return complete ? [] : [rootOf(d)];
    const k = split(d.length);
    return m <= k
      ? [...sub(m, d.slice(0, k), complete), rootOf(d.slice(k))]
      : [...sub(m - k, d.slice(k), false), rootOf(d.slice(0, k))];
  };
  return sub(m, leaves, true);
}

const lsb = (x: number) => (x & 1) === 1;

/** RFC 9162 2.1.3.2: checks that `leaf` sits at `index` in the tree of `size` with `root`. */
export function verifyInclusion(
  index: number,
  size: number,
  leaf: Uint8Array,
  path: Uint8Array[],
  root: Uint8Array,
): boolean {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (lsb(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!lsb(fn)) while (!lsb(fn) && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
    } else r = nodeHash(r, p);
    [fn, sn] = [fn >> 1, sn >> 1];
  }
  return sn === 0 && Buffer.compare(Buffer.from(r), Buffer.from(root)) === 0;
}

/** RFC 9162 2.1.4.2: checks that the tree of `first` leaves is a prefix of the tree of `second`. */
export function verifyConsistency(
  first: number,
  second: number,
  firstRoot: Uint8Array,
  secondRoot: Uint8Array,
  path: Uint8Array[],
): boolean {
  const eq = (a: Uint8Array, b: Uint8Array) => Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
  if (first < 1 || first > second) return false;
  if (first === second) return path.length === 0 && eq(firstRoot, secondRoot);
  if (path.length === 0) return false;
  const proof = (first & (first - 1)) === 0 ? [firstRoot, ...path] : [...path];
  let fn = first - 1;
  let sn = second - 1;
  while (lsb(fn)) [fn, sn] = [fn >> 1, sn >> 1];
  let fr: Uint8Array = proof[0]!;
  let sr: Uint8Array = proof[0]!;
  for (const c of proof.slice(1)) {
    if (sn === 0) return false;
    if (lsb(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (!lsb(fn)) while (!lsb(fn) && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
    } else sr = nodeHash(sr, c);
    [fn, sn] = [fn >> 1, sn >> 1];
  }
  return eq(fr, firstRoot) && eq(sr, secondRoot) && sn === 0;
}
