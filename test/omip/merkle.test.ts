import { describe, expect, it } from 'vitest';
import {
  consistencyProof,
  inclusionProof,
  leafHash,
  rootOf,
  verifyConsistency,
  verifyInclusion,
} from '../../api/omip/merkle.ts';

// The certificate-transparency reference vectors (RFC 6962 test data, the same tree hashing as RFC 9162).
const INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'];
const ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const leaves = INPUTS.map((h) => leafHash(Buffer.from(h, 'hex')));
const hex = (bs: Buffer[]) => bs.map((b) => b.toString('hex'));
const root = (n: number) => Buffer.from(ROOTS[n - 1]!, 'hex');

describe('RFC 9162 Merkle tree', () => {
  it('hashes the empty tree and the reference roots of sizes 1 to 8', () => {
    expect(rootOf([]).toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    for (let n = 1; n <= 8; n++) expect(rootOf(leaves.slice(0, n)).toString('hex'), `size ${n}`).toBe(ROOTS[n - 1]);
  });

  it('gives the reference inclusion proofs', () => {
    expect(hex(inclusionProof(0, leaves))).toEqual([
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ]);
    expect(hex(inclusionProof(5, leaves))).toEqual([
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ]);
    expect(hex(inclusionProof(2, leaves.slice(0, 3)))).toEqual([
      'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    ]);
    expect(hex(inclusionProof(1, leaves.slice(0, 5)))).toEqual([
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ]);
  });

  it('gives the reference consistency proofs', () => {
    expect(hex(consistencyProof(1, leaves))).toEqual([
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ]);
    expect(hex(consistencyProof(6, leaves))).toEqual([
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ]);
    expect(hex(consistencyProof(2, leaves.slice(0, 5)))).toEqual([
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ]);
  });

  it('verifies every inclusion and consistency proof of trees up to 8 leaves', () => {
    for (let n = 1; n <= 8; n++) {
      for (let m = 0; m < n; m++)
        expect(verifyInclusion(m, n, leaves[m]!, inclusionProof(m, leaves.slice(0, n)), root(n)), `${m} in ${n}`).toBe(
          true,
        );
      for (let m = 1; m <= n; m++)
        expect(verifyConsistency(m, n, root(m), root(n), consistencyProof(m, leaves.slice(0, n))), `${m} to ${n}`).toBe(
          true,
        );
    }
  });

  it('refuses tampered, truncated and misplaced proofs', () => {
    const path = inclusionProof(5, leaves);
    const tampered = path.map((p, i) => (i === 1 ? Buffer.from(p).fill(0, 0, 1) : p));
    expect(verifyInclusion(5, 8, leaves[5]!, tampered, root(8))).toBe(false);
    expect(verifyInclusion(5, 8, leaves[5]!, path.slice(0, 2), root(8))).toBe(false);
    expect(verifyInclusion(4, 8, leaves[5]!, path, root(8))).toBe(false);
    expect(verifyInclusion(5, 8, leaves[4]!, path, root(8))).toBe(false);
    expect(verifyInclusion(8, 8, leaves[5]!, path, root(8))).toBe(false);
    const consistency = consistencyProof(3, leaves);
    expect(verifyConsistency(3, 8, root(3), root(8), consistency.slice(0, -1))).toBe(false);
    expect(verifyConsistency(3, 8, root(4), root(8), consistency)).toBe(false);
    expect(verifyConsistency(3, 8, root(3), root(7), consistency)).toBe(false);
    expect(verifyConsistency(3, 8, root(3), root(8), [...consistency, consistency[0]!])).toBe(false);
  });
});

describe('the cached Merkle log', () => {
  it('gives the same roots and proofs as the reference functions at every size', async () => {
    const { MerkleLog } = await import('../../api/omip/merkle-log.ts');
    const data = Array.from({ length: 37 }, (_, i) => `sha256:${i}`);
    const log = new MerkleLog();
    for (let n = 1; n <= data.length; n++) {
      log.appendFrom(n - 1, [data[n - 1]!]);
      const leavesN = data.slice(0, n).map((d) => leafHash(Buffer.from(d)));
      expect(log.root().equals(rootOf(leavesN)), `root ${n}`).toBe(true);
      for (let m = 0; m < n; m++)
        expect(hex(log.inclusion(m)), `${m} in ${n}`).toEqual(hex(inclusionProof(m, leavesN)));
    }
    expect(log.root(5).equals(rootOf(data.slice(0, 5).map((d) => leafHash(Buffer.from(d)))))).toBe(true);
    // The same entries fetched twice (two requests at once) are added once.
    log.appendFrom(30, data.slice(30));
    expect(log.size).toBe(37);
  });
});
