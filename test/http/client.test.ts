import { describe, expect, it } from 'vitest';
import { clientKey, createClientResolver } from '../../api/http/client.ts';

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

  it('counts an IPv6 /64 as one client, an IPv4 address as itself', () => {
    expect(clientKey('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientKey('192.0.2.1')).toBe('192.0.2.1');
  });
});
