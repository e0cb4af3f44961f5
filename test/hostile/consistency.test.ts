import { describe, expect, it } from 'vitest';
import { consistencyProof, leafHash, verifyConsistency } from '../../api/omip/merkle.ts';
import { MerkleLog } from '../../api/omip/merkle-log.ts';

// A consistency proof costs O(log n) hashes, like an inclusion proof.
describe('consistency proofs from cached subtrees', () => {
  it('gives the reference proofs (RFC 9162) for every pair of sizes up to 40', () => {
    const data = Array.from({ length: 40 }, (_, i) => `receipt-${i}`);
    const log = new MerkleLog();
    log.appendFrom(0, data);
    const leaves = data.map((d) => leafHash(Buffer.from(d)));
    for (let n = 1; n <= 40; n++) {
      for (let m = 1; m <= n; m++) {
        const proof = log.consistency(m, n);
        expect(
          proof.map((p) => p.toString('hex')),
          `${m} to ${n}`,
        ).toEqual(consistencyProof(m, leaves.slice(0, n)).map((p) => p.toString('hex')));
        expect(verifyConsistency(m, n, log.root(m), log.root(n), proof)).toBe(true);
      }
    }
  });

  it('answers 500 proofs over a log of 100,000 receipts in well under a second', () => {
    const n = 100_000;
    const log = new MerkleLog();
    log.appendFrom(
      0,
      Array.from({ length: n }, (_, i) => `receipt-${i}`),
    );
    log.root(); // as the service does for every signed head
    const started = performance.now();
    let nodes = 0;
    for (let i = 1; i <= 500; i++) {
      const m = Math.floor((i * 7919) % (n - 1)) + 1;
      const proof = log.consistency(m);
      nodes += proof.length;
      expect(proof.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)));
    }
    const ms = performance.now() - started;
    expect(nodes).toBeGreaterThan(500);
    // Rehashing the whole log costs ~100 ms a proof here (50 s for 500); the cached tree ~0.05 ms.
    expect(ms).toBeLessThan(1000);
  });
});
