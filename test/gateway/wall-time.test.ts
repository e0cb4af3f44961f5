import { describe, expect, it } from 'vitest';
import { wallTime } from '../../api/gateway/wall-time.ts';

describe('the wall time of a performance.now() reading', () => {
  it('is the system clock, in whole milliseconds, for readings now and over time', async () => {
    for (let i = 0; i < 5; i++) {
      // Readings 0.3 s apart: past a second, the offset between the two clocks is read again.
      const ahead = i * 300;
      const before = Date.now() + ahead;
      const time = wallTime(performance.now() + ahead);
      const after = Date.now() + ahead;
      expect(Number.isInteger(time)).toBe(true);
      expect(time).toBeGreaterThanOrEqual(before - 1);
      expect(time).toBeLessThanOrEqual(after + 1);
    }
  });

  it('follows a system clock that was stepped, within a second', () => {
    const realNow = Date.now;
    try {
      const stepped = realNow() + 3_600_000;
      Date.now = () => stepped;
      // A reading a second and more after the last read of the offset reads it again.
      expect(wallTime(performance.now() + 1001)).toBeGreaterThan(stepped);
    } finally {
      Date.now = realNow;
    }
    expect(Math.abs(wallTime(performance.now() + 2002) - 2002 - Date.now())).toBeLessThan(50);
  });
});
