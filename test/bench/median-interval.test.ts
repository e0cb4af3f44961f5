import { describe, expect, it } from 'vitest';
import { medianInterval } from '../../bench/lib.ts';

// The interval bench:telemetry's verdict leans on: the order statistics a binomial table gives.
describe('the 95% interval of a median (distribution-free)', () => {
  const ranks = (n: number) => medianInterval(Array.from({ length: n }, (_, i) => i + 1));

  it('is the order statistics of the binomial table, whatever order the samples come in', () => {
    expect(ranks(6)).toEqual([1, 6]);
    expect(ranks(10)).toEqual([2, 9]);
    expect(ranks(20)).toEqual([6, 15]);
    expect(ranks(40)).toEqual([14, 27]);
    expect(medianInterval([0.95, 0.88, 0.91, 0.93, 0.9, 0.92])).toEqual([0.88, 0.95]);
  });

  it('is undefined where no interval of order statistics reaches 95%', () => {
    expect(ranks(5)).toBeUndefined();
    expect(medianInterval([])).toBeUndefined();
  });

  it('covers the true median of a skewed distribution about 95% of the time', () => {
    // Exponential samples (median ln 2), a fixed LCG so the run is the same each time.
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) + 0.5) / 2 ** 31;
    let covered = 0;
    const trials = 2000;
    for (let t = 0; t < trials; t++) {
      const [low, high] = medianInterval(Array.from({ length: 20 }, () => -Math.log(random())))!;
      if (low <= Math.LN2 && Math.LN2 <= high) covered++;
    }
    expect(covered / trials).toBeGreaterThan(0.93);
    expect(covered / trials).toBeLessThan(0.98);
  });
});
