import { describe, expect, it } from 'vitest';
import { normalisePath } from '../../api/gateway/static-site.ts';

describe('normalisePath', () => {
  it('keeps a plain path as it is (the fast path)', () => {
    expect(normalisePath('/api/convert')).toBe('/api/convert');
    expect(normalisePath('/.well-known/ai.txt')).toBe('/.well-known/ai.txt');
  });

  it('decodes and resolves what needs it', () => {
    expect(normalisePath('/doctrine/node%2Dprotocol')).toBe('/doctrine/node-protocol');
    expect(normalisePath('//api//convert')).toBe('/api/convert');
    expect(normalisePath('/api/./convert')).toBe('/api/convert');
  });

  it.each(['/..', '/a/../b', '..', '/%2e%2e/x', '/a%2f..%2fb', '/a\\b', '/%5c', '/%00', '/%E0%A4%A'])(
    'refuses %s',
    (path) => {
      expect(normalisePath(path)).toBeNull();
    },
  );
});
