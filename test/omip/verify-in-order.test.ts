import { describe, expect, it } from 'vitest';
import { rootOf } from '../../api/omip/merkle.ts';
import { receiptId, receiptLeaf } from '../../api/omip/receipts.ts';
import { verifyLogInOrder } from '../../api/omip/verify.ts';

/** A chained log of `n` receipts, as the receipt store keeps it. */
function log(n: number) {
  const entries: { index: number; id: string; receipt: Record<string, unknown> }[] = [];
  for (let index = 0; index < n; index++) {
    const receipt = { type: 'omip.dual-exchange', version: 1, n: index, prev: entries.at(-1)?.id ?? null };
    entries.push({ index, id: receiptId(receipt), receipt });
  }
  return entries;
}
async function* each<T>(items: T[]) {
  yield* items;
}

describe('verifyLogInOrder: verifyLog over a log read an entry at a time', () => {
  it('gives the RFC 9162 root of every size, as rootOf over all leaves at once', async () => {
    for (let n = 0; n <= 70; n++) {
      const entries = log(n);
      const checked = await verifyLogInOrder(each(entries));
      expect(checked.problems, `size ${n}`).toEqual([]);
      expect(checked.size).toBe(n);
      expect(checked.root, `size ${n}`).toBe(rootOf(entries.map((e) => receiptLeaf(e.id))).toString('hex'));
    }
  });

  it('finds a receipt that does not hash to its id, a broken chain and a missing position', async () => {
    const entries = log(9);
    const tampered = entries.map((e) => (e.index === 3 ? { ...e, receipt: { ...e.receipt, n: 99 } } : e));
    expect((await verifyLogInOrder(each(tampered))).problems).toEqual([
      `receipt ${entries[3]!.id} does not hash to its id`,
    ]);
    const unchained = entries.map((e) => (e.index === 5 ? { ...e, receipt: { ...e.receipt, prev: null } } : e));
    expect((await verifyLogInOrder(each(unchained))).problems).toContain(
      `receipt ${entries[5]!.id} has prev null, expected ${entries[4]!.id}`,
    );
    const gap = entries.filter((e) => e.index !== 6);
    expect((await verifyLogInOrder(each(gap))).problems).toEqual(['the receipt at position 6 says position 7']);
  });
});
