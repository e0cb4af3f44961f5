import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprintOf } from '../../api/omip/canonical.ts';

// RFC 8785 appendix and section 3.2 examples.
describe('RFC 8785 canonical JSON', () => {
  it('serialises the RFC example: numbers, strings and literals', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units', () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    // Read the order off the text: JS objects put integer-like keys such as "1" first.
    const text = canonicalJson(input);
    const order = ['Carriage Return', 'One', 'Control', 'Latin Small', 'Euro Sign', 'Emoji', 'Hebrew'].map((v) =>
      text.indexOf(v),
    );
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(text.startsWith('{"\\r":"Carriage Return","1":"One","\u0080":"Control"')).toBe(true);
  });

  it('formats numbers as ECMAScript does', () => {
    expect(canonicalJson([1e21, -0, 0.000001, 1e-7, 9007199254740992, 5e-324])).toBe(
      '[1e+21,0,0.000001,1e-7,9007199254740992,5e-324]',
    );
  });

  it('refuses lone surrogates and non-finite numbers with a 422 problem', () => {
    expect(() => canonicalJson({ a: '\ud800' })).toThrow(expect.objectContaining({ code: 'NOT_CANONICALIZABLE' }));
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(expect.objectContaining({ code: 'NOT_CANONICALIZABLE' }));
  });

  it('fingerprints ignore key order', () => {
    expect(fingerprintOf({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe(fingerprintOf({ a: [2, { c: 4, d: 3 }], b: 1 }));
    expect(fingerprintOf({ a: 1 })).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
