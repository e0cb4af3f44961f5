import { Resolver } from 'node:dns/promises';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressFamily, networkList } from '../../net/address.ts';

/** What a key-directory fetch brought back: any status, the headers, the body read whole within bounds. */
export interface DirectoryResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Fetches one key-directory URL (a well-known directory, a JWK Set or a metadata document) with the
 * given request headers. Throws when no answer could be had within its bounds. The composition root
 * passes `httpDirectoryFetcher()`; tests pass one that may reach their loopback server.
 */
export type DirectoryFetcher = (url: string, headers: Record<string, string>) => Promise<DirectoryResponse>;

/** The limits of one directory fetch: connect, answer and body within this long, and no bigger. */
export const DIRECTORY_FETCH_TIMEOUT_MS = 3000;
export const DIRECTORY_MAX_BYTES = 64 * 1024;

/** Why a fetch was not made or not read: the destination, the scheme, the size, the encoding. */
export class DirectoryFetchError extends Error {
  override name = 'DirectoryFetchError';
}

// Special-purpose ranges (IANA registries): a directory is never fetched from any of them, so a
// Signature-Agent cannot point the server at its own network (draft §6.7, OWASP SSRF).
const FORBIDDEN = networkList([
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
]);
const LOOPBACK = networkList([
  ['127.0.0.0', 8],
  ['::1', 128],
]);

/**
 * Whether a directory may be fetched from this address: never from a private, loopback, link-local,
 * shared, documentation, multicast or reserved range (IPv4-mapped IPv6 addresses count as their
 * IPv4 address); loopback only when `allowLoopback` (tests).
 */
export function mayConnectTo(address: string, allowLoopback = false): boolean {
  if (isIP(address) === 0) return false;
  if (allowLoopback && LOOPBACK.check(address, addressFamily(address))) return true;
  return !FORBIDDEN.check(address, addressFamily(address));
}

export interface DirectoryFetcherOptions {
  /** Lets fetches reach 127.0.0.0/8 and ::1, over http too: for tests that serve directories on loopback. */
  allowLoopback?: boolean;
  timeoutMs?: number;
  maxBytes?: number;
  /** The addresses of a host name (A and AAAA); c-ares queries by default. */
  resolve?: (host: string) => Promise<string[]>;
}

function systemResolve(timeoutMs: number) {
  const dns = new Resolver({ timeout: timeoutMs, tries: 1 });
  const none = (): string[] => [];
  return async (host: string) => [...(await dns.resolve4(host).catch(none)), ...(await dns.resolve6(host).catch(none))];
}

const flatHeaders = (headers: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));

/**
 * Key directories over HTTPS, guarded: https only (http only to loopback when allowed), every
 * address the name resolves to checked before connecting (the check is the connection's own
 * lookup, so a second DNS answer cannot slip past it), no redirect followed, no content coding, at
 * most `maxBytes` read and everything within `timeoutMs`.
 */
export function httpDirectoryFetcher(o: DirectoryFetcherOptions = {}): DirectoryFetcher {
  const timeoutMs = o.timeoutMs ?? DIRECTORY_FETCH_TIMEOUT_MS;
  const maxBytes = o.maxBytes ?? DIRECTORY_MAX_BYTES;
  const resolve = o.resolve ?? systemResolve(timeoutMs);
  const allowLoopback = o.allowLoopback ?? false;

  const lookup: LookupFunction = (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const allowed = addresses.filter((a) => mayConnectTo(a, allowLoopback));
        // One forbidden answer refuses the name: a host that resolves inward is not a signer's.
        if (!allowed.length || allowed.length !== addresses.length)
          return callback(
            new DirectoryFetchError(`${hostname} resolves to no address a directory may be fetched from`),
            '',
            4,
          );
        if (options.all)
          return callback(
            null,
            allowed.map((address) => ({ address, family: isIP(address) })),
          );
        callback(null, allowed[0]!, isIP(allowed[0]!));
      },
      (error: Error) => callback(error as NodeJS.ErrnoException, '', 4),
    );
  };

  return (target, headers) =>
    new Promise<DirectoryResponse>((resolvePromise, reject) => {
      const url = new URL(target);
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const literal = isIP(host) !== 0;
      const loopbackHost = literal && allowLoopback && LOOPBACK.check(host, addressFamily(host));
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopbackHost))
        return reject(new DirectoryFetchError(`${url.protocol} is not https`));
      // A literal address is connected to without a lookup, so it is checked here.
      if (literal && !mayConnectTo(host, allowLoopback))
        return reject(new DirectoryFetchError(`${host} is not an address a directory may be fetched from`));
      const client = url.protocol === 'https:' ? https : http;
      const req = client.request(url, {
        method: 'GET',
        headers: {
          ...headers,
          'accept-encoding': 'identity',
          'user-agent': 'agent-node-service (Web Bot Auth key directory)',
        },
        lookup,
        agent: false,
        signal: AbortSignal.timeout(timeoutMs),
      });
      req.on('error', reject);
      req.on('response', (res) => {
        const fail = (message: string) => {
          res.destroy();
          reject(new DirectoryFetchError(message));
        };
        const encoding = res.headers['content-encoding'];
        if (encoding !== undefined && encoding !== 'identity') return fail(`content coding ${encoding}`);
        if (Number(res.headers['content-length'] ?? 0) > maxBytes) return fail(`larger than ${maxBytes} bytes`);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.byteLength;
          if (size > maxBytes) return fail(`larger than ${maxBytes} bytes`);
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolvePromise({
            status: res.statusCode ?? 0,
            headers: flatHeaders(res.headers),
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      });
      req.end();
    });
}
