import { describe, expect, it } from 'vitest';
import { createClientResolver } from '../../api/http/client.ts';
import { clientKey } from '../../api/net/address.ts';

describe('the client of a request', () => {
  it('is the socket peer when no proxy is trusted, whatever the headers say', () => {
    const clientOf = createClientResolver([]);
    expect(clientOf('10.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('10.0.0.1');
    expect(clientOf('::ffff:10.0.0.1', {})).toBe('10.0.0.1');
  });

  it('behind trusted proxies, is the nearest hop no trusted proxy wrote; what the client itself sent is ignored', () => {
    const clientOf = createClientResolver(['10.0.0.0/8']);
    expect(clientOf('10.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('203.0.113.9');
    // The client forged the first hop; the proxy appended the real one.
    expect(clientOf('10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' })).toBe('203.0.113.9');
    // Two proxies deep.
    expect(clientOf('10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 203.0.113.9, 10.1.2.3' })).toBe('203.0.113.9');
    // An untrusted sender's header is never read.
    expect(clientOf('192.0.2.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('192.0.2.1');
    // A hop that is no address stops the walk at the proxy that wrote it.
    expect(clientOf('10.0.0.1', { 'x-forwarded-for': 'unknown' })).toBe('10.0.0.1');
    expect(clientOf('10.0.0.1', {})).toBe('10.0.0.1');
  });

  it('reads RFC 7239 Forwarded when told to, brackets and ports included', () => {
    const clientOf = createClientResolver(['loopback'], 'forwarded');
    expect(clientOf('127.0.0.1', { forwarded: 'for="[2001:db8:cafe::17]:4711";proto=https' })).toBe(
      '2001:db8:cafe::17',
    );
    expect(clientOf('127.0.0.1', { forwarded: 'for="192.0.2.60:8080", for=198.51.100.17' })).toBe('198.51.100.17');
    expect(clientOf('127.0.0.1', { forwarded: 'for=_hidden' })).toBe('127.0.0.1');
    expect(clientOf('127.0.0.1', { forwarded: 'for="192.0.2.60:8080"' })).toBe('192.0.2.60');
    expect(clientOf('127.0.0.1', { forwarded: 'not;;a=valid"' })).toBe('127.0.0.1');
    // X-Forwarded-For is not the header it was told to read.
    expect(clientOf('127.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('127.0.0.1');
  });

  it("per request: the peer once per connection, a trusted proxy's clients from each request", () => {
    const direct = createClientResolver([]);
    const socket = { remoteAddress: '::ffff:192.0.2.7' };
    const first = direct.ofRequest(socket, {});
    expect(first).toMatchObject({ address: '192.0.2.7', key: '192.0.2.7' });
    // The same connection's next request reads nothing again (the headers never count here).
    expect(direct.ofRequest(socket, { 'x-forwarded-for': '203.0.113.9' })).toBe(first);
    expect(direct.ofRequest({ remoteAddress: '2001:db8:1:2::a' }, {})).toMatchObject({
      address: '2001:db8:1:2::a',
      key: '2001:db8:1:2::/64',
    });
    const proxied = createClientResolver(['10.0.0.0/8']);
    const proxy = { remoteAddress: '10.0.0.1' };
    expect(proxied.ofRequest(proxy, { 'x-forwarded-for': '203.0.113.9' })).toMatchObject({
      address: '203.0.113.9',
      key: '203.0.113.9',
    });
    // Each request on a proxy's connection is its own client's.
    expect(proxied.ofRequest(proxy, { 'x-forwarded-for': '2001:db8:cafe:1::17' })).toMatchObject({
      address: '2001:db8:cafe:1::17',
      key: '2001:db8:cafe:1::/64',
    });
    expect(proxied.ofRequest(proxy, {})).toMatchObject({ address: '10.0.0.1' });
    // Whatever the path, the answer is the call's.
    for (const [peer, headers] of [
      ['10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' }],
      ['192.0.2.1', { 'x-forwarded-for': '203.0.113.9' }],
      ['::ffff:10.0.0.2', { 'x-forwarded-for': 'unknown' }],
    ] as const)
      expect(proxied.ofRequest({ remoteAddress: peer }, headers).address).toBe(proxied(peer, headers));
  });

  it('counts an IPv6 /64 as one client, an IPv4 address as itself', () => {
    expect(clientKey('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientKey('192.0.2.1')).toBe('192.0.2.1');
    // No colon, no IPv6: kept as given (the socket's address when nothing better is known).
    expect(clientKey('')).toBe('');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
  });
});
