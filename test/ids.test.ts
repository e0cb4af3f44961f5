import { validate, version } from 'uuid';
import { describe, expect, it } from 'vitest';
import { newId, randomBytes } from '../api/ids.ts';

describe('ids and random bytes (api/ids.ts)', () => {
  it('makes valid, unique UUIDv7s that sort in the order they were made, many per millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    for (const id of ids.slice(0, 50)) {
      expect(validate(id)).toBe(true);
      expect(version(id)).toBe(7);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries the current time in its first 48 bits', () => {
    const before = Date.now();
    const ms = parseInt(newId().replaceAll('-', '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1);
  });

  it('hands out random bytes once: no two draws share bytes across a refill of the pool', () => {
    const draws = Array.from({ length: 300 }, () => Buffer.from(randomBytes(32)).toString('hex'));
    expect(new Set(draws).size).toBe(draws.length);
    expect(draws.every((d) => d.length === 64)).toBe(true);
  });
});
