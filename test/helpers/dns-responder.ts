import { createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import * as dnsPacket from 'dns-packet';

// A DNS server on loopback for the servers tests and benches start (DNS_SERVERS), so that
// reverse-DNS verification of crawler claims never sends a packet off this machine. It answers
// PTR, A and AAAA from a table the test gives, and NXDOMAIN for every other name (a fast "no",
// which verification counts as failed), drops the questions under the zones it is told to (a
// server that never answers: the resolver times out), and it counts every query it receives.

/** What the responder knows: address -> PTR names, and host name -> addresses (A and AAAA by family). */
export interface DnsTable {
  ptr?: Record<string, string[]>;
  hosts?: Record<string, string[]>;
  /** Zones (`a.a.a.a.8.b.d.0.1.0.0.2.ip6.arpa`) whose questions, and their names' below, get no answer. */
  silent?: string[];
}

/** One question the responder received. */
export interface DnsQuery {
  type: string;
  name: string;
}

export interface DnsResponder {
  /** For DNS_SERVERS: `127.0.0.1:port`. */
  address: string;
  /** Every question received so far, oldest first. */
  queries: DnsQuery[];
  /** Adds to the table (later queries see it). */
  add(table: DnsTable): void;
  close(): Promise<void>;
}

/** The name a PTR query for `ip` asks about (RFC 1035 3.5 in-addr.arpa, RFC 3596 ip6.arpa). */
export function arpaOf(ip: string): string {
  if (isIP(ip) === 4) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  if (isIP(ip) !== 6) throw new Error(`not an IP address: ${ip}`);
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const full = [
    ...groups(head),
    ...Array.from({ length: ip.includes('::') ? missing : 0 }, () => '0'),
    ...groups(tail),
  ];
  return `${[...full.map((g) => g.padStart(4, '0')).join('')].reverse().join('.')}.ip6.arpa`;
}

const NXDOMAIN = 3;

/**
 * Starts a responder on 127.0.0.1 and a free UDP port. Its socket is unref'd: it never keeps a test
 * worker or a bench alive by itself.
 */
export async function startDnsResponder(table: DnsTable = {}): Promise<DnsResponder> {
  const ptr = new Map<string, string[]>();
  const hosts = new Map<string, string[]>();
  const silent: string[] = [];
  const add = (t: DnsTable) => {
    for (const [ip, names] of Object.entries(t.ptr ?? {})) ptr.set(arpaOf(ip), names);
    for (const [name, ips] of Object.entries(t.hosts ?? {})) hosts.set(name.toLowerCase(), ips);
    silent.push(...(t.silent ?? []).map((zone) => zone.toLowerCase()));
  };
  const dropped = (name: string) => silent.some((zone) => name === zone || name.endsWith(`.${zone}`));
  add(table);
  const queries: DnsQuery[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (message, peer) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return; // not DNS: no answer
    }
    const answers: dnsPacket.Answer[] = [];
    let known = false;
    let drop = false;
    for (const q of query.questions ?? []) {
      const name = q.name.toLowerCase();
      queries.push({ type: q.type, name });
      if (dropped(name)) drop = true;
      else if (q.type === 'PTR' && ptr.has(name)) {
        known = true;
        for (const data of ptr.get(name)!) answers.push({ type: 'PTR', name: q.name, ttl: 60, data });
      } else if ((q.type === 'A' || q.type === 'AAAA') && hosts.has(name)) {
        // A name that exists answers NOERROR, with no record of a family it has no address of.
        known = true;
        for (const data of hosts.get(name)!.filter((ip) => isIP(ip) === (q.type === 'A' ? 4 : 6)))
          answers.push({ type: q.type, name: q.name, ttl: 60, data });
      }
    }
    if (drop) return;
    const flags =
      dnsPacket.AUTHORITATIVE_ANSWER |
      dnsPacket.RECURSION_AVAILABLE |
      ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) |
      (known ? 0 : NXDOMAIN);
    socket.send(
      dnsPacket.encode({ type: 'response', id: query.id ?? 0, flags, questions: query.questions ?? [], answers }),
      peer.port,
      peer.address,
    );
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  socket.unref();
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    add,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

let shared: Promise<DnsResponder> | undefined;
/** One responder per process that knows no name: the default DNS_SERVERS of the servers tests start. */
export function sharedDnsResponder(): Promise<DnsResponder> {
  return (shared ??= startDnsResponder());
}
