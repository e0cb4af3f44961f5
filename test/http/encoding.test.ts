import { describe, expect, it } from 'vitest';
import { chooseEncoding, encodingChoicesKept, ENCODING_CHOICES_KEPT } from '../../api/http/encoding.ts';

describe('Accept-Encoding', () => {
  it('picks br, then gzip; q=0 refuses a coding; * stands for any coding not named', () => {
    const cases: [string | undefined, 'br' | 'gzip' | null][] = [
      [undefined, null],
      ['', null],
      ['identity', null],
      ['gzip', 'gzip'],
      ['gzip, deflate, br', 'br'],
      ['gzip, deflate, br, zstd', 'br'],
      ['BR;Q=1.0, GZIP;q=0.8', 'br'],
      ['br;q=0, gzip', 'gzip'],
      ['br;q=0, gzip;q=0', null],
      ['*', 'br'],
      ['*;q=0.1, br;q=0', 'gzip'],
      ['deflate, *;q=0', null],
      ['gzip;q=abc', null],
    ];
    // Twice each: the second answer comes from the kept choices and must be the same.
    for (let round = 0; round < 2; round++)
      for (const [header, choice] of cases) expect([header, chooseEncoding(header)]).toEqual([header, choice]);
  });

  it('keeps a bounded number of choices whatever a client rotates through, and still answers each right', () => {
    for (let i = 0; i < 10 * ENCODING_CHOICES_KEPT; i++) {
      expect(chooseEncoding(`x-${i}, gzip`)).toBe('gzip');
      expect(encodingChoicesKept()).toBeLessThanOrEqual(ENCODING_CHOICES_KEPT);
    }
    // Too long to keep: read every time, never kept.
    const kept = encodingChoicesKept();
    expect(chooseEncoding(`${'x-long, '.repeat(64)}br`)).toBe('br');
    expect(encodingChoicesKept()).toBe(kept);
  });
});
