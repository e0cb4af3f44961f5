import { isIP } from 'node:net';
import parseForwarded from 'forwarded-parse';
import proxyaddr from 'proxy-addr';
import { clientKey, unmapped } from '../net/address.ts';

/** The header a trusted proxy writes the client into: X-Forwarded-For (nginx's default) or RFC 7239 Forwarded. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

/** An address as the socket or a proxy wrote it, plain: IPv4-mapped IPv6 as IPv4, no brackets or port; '' when it is none. */
function plainAddress(written: string): string {
  let address = written.trim();
  if (address.startsWith('[')) address = address.slice(1, address.indexOf(']'));
  else if (isIP(address) === 0 && /^[\d.]+:\d+$/.test(address)) address = address.slice(0, address.lastIndexOf(':'));
  address = unmapped(address);
  return isIP(address) ? address : '';
}

/** Characters of X-Forwarded-For or Forwarded read, from its end: some fifty hops. */
export const PROXY_HEADER_MAX_CHARS = 2048;

/** The hops a request's proxy header lists, nearest last (as proxies append), or [] when it has none or cannot be read. */
function hopsOf(headers: Readonly<Record<string, string | string[] | undefined>>, name: ProxyHeader): string[] {
  const value = headers[name];
  let text = Array.isArray(value) ? value.join(', ') : value;
  if (!text) return [];
  // Only the nearest hops matter (the walk stops at the first untrusted one): a longer header is
  // read from its last whole hop within PROXY_HEADER_MAX_CHARS, so its cost stays that of a short one.
  if (text.length > PROXY_HEADER_MAX_CHARS) {
    const tail = text.slice(-PROXY_HEADER_MAX_CHARS);
    text = tail.slice(tail.indexOf(',') + 1).trimStart();
  }
  if (name === 'x-forwarded-for') return text.split(',');
  try {
    return parseForwarded(text).map((element) => element.for ?? '');
  } catch {
    return [];
  }
}

/** A request's client: its address (what verification and the wall read) and its key (what every per-client limit counts). */
export interface Client {
  address: string;
  key: string;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface ClientResolver {
  /** The client of a request: the socket's peer, or, when that peer is a trusted proxy, the address it forwarded. */
  (socketAddress: string, headers: Headers): string;
  /** Whether a peer is a trusted proxy (its connections are its clients', not its own). */
  trusts(address: string): boolean;
  /**
   * The client of a request on `socket`, with its key: the same answer as the call, but a peer that
   * is no trusted proxy is resolved once per connection (a keep-alive connection's requests are all
   * its peer's), not per request.
   */
  ofRequest(socket: { remoteAddress?: string | undefined }, headers: Headers): Client;
}

/**
 * Resolves clients behind the proxies in `trust` (addresses, CIDRs, or proxy-addr's names
 * `loopback`, `linklocal`, `uniquelocal`; none by default): walking the proxy header from the
 * nearest hop back, each hop is believed only while the one that wrote it is trusted, so a client's
 * own X-Forwarded-For or Forwarded is ignored. An empty or unreadable hop stops the walk at the
 * proxy that wrote it.
 */
export function createClientResolver(
  trust: readonly string[],
  header: ProxyHeader = 'x-forwarded-for',
): ClientResolver {
  const trusted = trust.length ? proxyaddr.compile([...trust]) : () => false;
  const resolve = ((socketAddress, headers) => {
    let client = plainAddress(socketAddress) || socketAddress;
    if (!trust.length) return client;
    const hops = hopsOf(headers, header);
    for (let i = hops.length - 1, depth = 0; i >= 0 && trusted(client, depth); i--, depth++) {
      const hop = plainAddress(hops[i]!);
      if (!hop) break;
      client = hop;
    }
    return client;
  }) as ClientResolver;
  resolve.trusts = (address) => trust.length > 0 && trusted(plainAddress(address) || address, 0);
  // A socket's peer never changes: its address, key and whether it is a trusted proxy, once.
  const peers = new WeakMap<object, Client & { proxy: boolean }>();
  resolve.ofRequest = (socket, headers) => {
    let peer = peers.get(socket);
    if (!peer) {
      const written = socket.remoteAddress ?? '';
      const address = plainAddress(written) || written;
      peer = { address, key: clientKey(address), proxy: trust.length > 0 && trusted(address, 0) };
      peers.set(socket, peer);
    }
    if (!peer.proxy) return peer;
    const address = resolve(socket.remoteAddress ?? '', headers);
    return { address, key: clientKey(address) };
  };
  return resolve;
}

/** Throws when a TRUST_PROXY list has an entry proxy-addr cannot read. */
export function checkTrustList(trust: readonly string[]): void {
  proxyaddr.compile([...trust]);
}
