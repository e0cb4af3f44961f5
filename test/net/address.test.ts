import { describe, expect, it } from 'vitest';
import { clientKey } from '../../api/net/address.ts';
import { prefix64, unmapped, v6Groups } from '../../api/net/address.ts';
import { networkOf } from '../../api/telemetry/verification/address-ranges.ts';

describe('IP address forms', () => {
  it('reads an IPv4-mapped IPv6 address as IPv4, in any case, and leaves every other address as given', () => {
    expect(unmapped('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(unmapped('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    expect(unmapped('::ffff:c000:201')).toBe('::ffff:c000:201');
    expect(unmapped('::ffff:999.0.2.1')).toBe('::ffff:999.0.2.1');
    expect(unmapped('192.0.2.1')).toBe('192.0.2.1');
    expect(unmapped('2001:db8::1')).toBe('2001:db8::1');
  });

  it('expands an IPv6 address to its 8 groups: ::, a zone, an embedded IPv4 tail', () => {
    expect(v6Groups('2001:db8::1')).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    expect(v6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(v6Groups('FE80::1%eth0')).toEqual([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(v6Groups('64:ff9b::192.0.2.33')).toEqual([0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x221]);
  });

  it('spells a /64 one way, so the per-client limits and crawler verification count an IPv6 host alike', () => {
    const spellings = [
      '2001:db8:1:2::a',
      '2001:0DB8:0001:0002:ffff:1:2:3',
      '2001:db8:1:2:0:0:0:1',
      '2001:db8:1:2::1.2.3.4',
    ];
    for (const ip of spellings) {
      expect(prefix64(ip)).toBe('2001:db8:1:2::/64');
      expect(clientKey(ip)).toBe(networkOf(ip));
    }
  });
});
