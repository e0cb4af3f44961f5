import { isIP } from 'node:net';
import { ipv4Number, prefix64, unmapped, v6Groups } from '../../net/address.ts';

/** A set of IPv4 and IPv6 prefixes, answered by binary search over merged intervals. */
export interface AddressRanges {
  has(ip: string): boolean;
  readonly size: number;
}

const v6 = (ip: string): bigint => v6Groups(ip).reduce((n, g) => (n << 16n) | BigInt(g), 0n);

const next = <T extends number | bigint>(x: T): T => (typeof x === 'bigint' ? x + 1n : (x as number) + 1) as T;

function merged<T extends number | bigint>(intervals: [T, T][]): [T[], T[]] {
  intervals.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const starts: T[] = [];
  const ends: T[] = [];
  for (const [s, e] of intervals) {
    const last = ends.length - 1;
    // Adjacent or overlapping intervals become one.
    if (last >= 0 && s <= next(ends[last]!)) {
      if (e > ends[last]!) ends[last] = e;
    } else {
      starts.push(s);
      ends.push(e);
    }
  }
  return [starts, ends];
}

function within<T extends number | bigint>(starts: T[], ends: T[], x: T): boolean {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (x < starts[mid]!) hi = mid - 1;
    else if (x > ends[mid]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/**
 * Builds the set from prefixes such as 66.249.64.0/19 or 2001:4860:4801::/48 (a bare address is
 * one address). node's BlockList checks its rules one by one; with Ahrefs' ~10,000 addresses that
 * is a scan per request, this is a binary search.
 */
export function addressRanges(prefixes: string[]): AddressRanges {
  const four: [number, number][] = [];
  const six: [bigint, bigint][] = [];
  for (const prefix of prefixes) {
    const [net, bitsText] = prefix.split('/') as [string, string | undefined];
    const kind = isIP(net);
    if (kind === 4) {
      const bits = bitsText === undefined ? 32 : Number(bitsText);
      const size = 2 ** (32 - bits);
      const start = Math.floor(ipv4Number(net) / size) * size;
      four.push([start, start + size - 1]);
    } else if (kind === 6) {
      const bits = BigInt(bitsText === undefined ? 128 : Number(bitsText));
      const size = 1n << (128n - bits);
      const start = (v6(net) / size) * size;
      six.push([start, start + size - 1n]);
    }
  }
  const [s4, e4] = merged(four);
  const [s6, e6] = merged(six);
  return {
    size: s4.length + s6.length,
    has(ip: string): boolean {
      const plain = unmapped(ip);
      const four = ipv4Number(plain);
      if (four >= 0) return within(s4, e4, four);
      return s6.length > 0 && isIP(plain) === 6 && within(s6, e6, v6(plain));
    },
  };
}

/** The network an address belongs to for caching: its /24 (IPv4) or /64 (IPv6). */
export function networkOf(ip: string): string {
  const plain = unmapped(ip);
  const kind = isIP(plain);
  if (kind === 4) return `${plain.slice(0, plain.lastIndexOf('.'))}.0/24`;
  if (kind === 6) return prefix64(plain);
  return plain;
}

/**
 * The network whose reverse DNS answers for an address, as verification shares its lookups out and
 * remembers its silence: its /24 (IPv4), or its /48 (IPv6), an end site's allocation (RFC 6177; a
 * tunnel broker hands one out free, reverse zone delegated). One holder of a /48 has 65,536 /64s.
 */
export function siteOf(ip: string): string {
  const plain = unmapped(ip);
  const kind = isIP(plain);
  if (kind === 4) return `${plain.slice(0, plain.lastIndexOf('.'))}.0/24`;
  if (kind === 6)
    return `${v6Groups(plain)
      .slice(0, 3)
      .map((g) => g.toString(16))
      .join(':')}::/48`;
  return plain;
}
