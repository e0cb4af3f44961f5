import { BlockList, isIP, isIPv6 } from 'node:net';

// The forms of an IP address that more than one door reads: the per-client limits (api/http) and
// crawler verification (api/telemetry) count an IPv6 host by the same /64.

/**
 * An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, any case) as the IPv4 address it is; any other
 * as given. Only a string starting with a colon is looked at further: no string is made for others.
 */
export const unmapped = (address: string): string =>
  address.charCodeAt(0) === 58 && address.slice(0, 7).toLowerCase() === '::ffff:' && isIP(address.slice(7)) === 4
    ? address.slice(7)
    : address;

/**
 * An IPv4 address as a number, or -1 when `ip` is no address isIP reads as IPv4 (four decimal
 * octets, no leading zero): one pass over the characters, no strings made, as every counted
 * request of a family checked by its ranges asks (no split, no isIP first).
 */
export function ipv4Number(ip: string): number {
  let n = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      n = n * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57 && !(digits > 0 && octet === 0)) {
      octet = octet * 10 + c - 48;
      if (++digits > 3 || octet > 255) return -1;
    } else return -1;
  }
  return dots === 3 && digits > 0 ? n * 256 + octet : -1;
}

const IPV4_TAIL = /(\d+\.\d+\.\d+\.\d+)$/;

/** The 8 groups of an IPv6 address (with :: expanded, a zone dropped; an embedded IPv4 tail becomes two groups). */
export function v6Groups(ip: string): number[] {
  let text = ip.toLowerCase().split('%')[0]!;
  const tail = IPV4_TAIL.exec(text);
  if (tail) {
    const n = ipv4Number(tail[1]!);
    text = `${text.slice(0, tail.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const fill = rest === undefined ? [] : Array<string>(8 - h.length - r.length).fill('0');
  return [...h, ...fill, ...r].map((g) => parseInt(g, 16));
}

/** The /64 an IPv6 address belongs to, in one spelling whatever the address's (`2001:db8:1:2::/64`): one host can rotate through all of it. */
export const prefix64 = (ip: string): string =>
  `${v6Groups(ip)
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;

/**
 * The unit one client is counted as by every per-client limit (writes, uploads, lingering,
 * connections, the wall's pool evidence and referral tally): its IPv4 address, or for IPv6 its
 * /64, which one host can rotate through.
 */
export function clientKey(address: string): string {
  // Every IPv6 form has a colon: an IPv4 address (almost every client) skips isIPv6's long pattern.
  if (!address.includes(':') || !isIPv6(address)) return address;
  const v4 = unmapped(address);
  return v4 !== address ? v4 : prefix64(address);
}

/** The BlockList family an address is checked in. */
export const addressFamily = (address: string): 'ipv4' | 'ipv6' => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** A BlockList of networks, each `[address, prefix bits]`, IPv4 and IPv6 alike. */
export function networkList(networks: readonly (readonly [string, number])[]): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of networks) list.addSubnet(net, prefix, addressFamily(net));
  return list;
}
