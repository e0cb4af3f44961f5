import { describe, expect, it } from 'vitest';
import { remember } from '../api/memo.ts';

describe('a memo bounded by entries', () => {
  it('keeps answers up to its bound, then starts again from the next one', () => {
    const memo = new Map<string, number>();
    for (let i = 0; i < 3; i++) expect(remember(memo, 3, `k${i}`, i)).toBe(i);
    expect([...memo.keys()]).toEqual(['k0', 'k1', 'k2']);
    expect(remember(memo, 3, 'k3', 3)).toBe(3);
    expect([...memo]).toEqual([['k3', 3]]);
  });

  it('never holds more than its bound, whatever is put in', () => {
    const memo = new Map<number, number>();
    for (let i = 0; i < 10_000; i++) {
      remember(memo, 64, i, i);
      expect(memo.size).toBeLessThanOrEqual(64);
    }
  });
});
