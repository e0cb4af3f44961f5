import { createSocket } from 'node:dgram';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { isIP } from 'node:net';
import { addressRanges, networkOf, siteOf } from '../../api/telemetry/verification/address-ranges.ts';
import { ipv4Number } from '../../api/net/address.ts';
import {
  createVerifier,
  RDNS_NAMES_CHECKED,
  RDNS_NETWORK_FAILURES,
  RDNS_SITE_UNANSWERED,
  rangesOf,
  reverseName,
  systemResolver,
  verifyByDns,
  type Outcome,
  type Resolver,
} from '../../api/telemetry/verification/verify.ts';
import type { BotFamily, BotIpRanges } from '../../api/schemas/bot-families.ts';
import { arpaOf, startDnsResponder } from '../helpers/dns-responder.ts';

let families: BotFamily[];
let shipped: BotIpRanges;
beforeAll(async () => {
  const content = await loadContent('content');
  families = content.botFamilies.families;
  shipped = content.botIpRanges;
});
const family = (name: string) => families.find((f) => f.family === name)!;

const recorded = (ptr: Record<string, string[]>, a: Record<string, string[]>): Resolver => ({
  reverse: async (ip) => ptr[ip] ?? Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' })),
  resolve: async (host) => a[host] ?? [],
});

describe('reverse DNS with forward confirmation (recorded answers)', () => {
  it('verifies a PTR in the operator domain that resolves back', async () => {
    const r = recorded(
      { '66.249.66.1': ['crawl-66-249-66-1.googlebot.com'] },
      { 'crawl-66-249-66-1.googlebot.com': ['66.249.66.1'] },
    );
    expect(await verifyByDns(family('Googlebot'), '66.249.66.1', r)).toBe('verified');
  });

  it('fails a Google Cloud VM claiming Googlebot: googleusercontent.com is not a Googlebot domain', async () => {
    const vm = recorded(
      { '34.1.2.3': ['3.2.1.34.bc.googleusercontent.com'] },
      { '3.2.1.34.bc.googleusercontent.com': ['34.1.2.3'] },
    );
    expect(await verifyByDns(family('Googlebot'), '34.1.2.3', vm)).toBe('failed');
    expect(family('Googlebot').rdns).toEqual(['.googlebot.com', '.google.com']);
    // Only Google's user-triggered fetchers may come from gae.googleusercontent.com.
    const gae = recorded(
      { '35.1.2.3': ['x.gae.googleusercontent.com'] },
      { 'x.gae.googleusercontent.com': ['35.1.2.3'] },
    );
    expect(await verifyByDns(family('FeedFetcher-Google'), '35.1.2.3', gae)).toBe('verified');
    for (const f of families)
      for (const suffix of f.rdns ?? []) expect(suffix === '.googleusercontent.com', f.family).toBe(false);
  });

  it('fails a PTR outside the operator domain, one that does not resolve back, or none', async () => {
    expect(
      await verifyByDns(
        family('Googlebot'),
        '203.0.113.9',
        recorded({ '203.0.113.9': ['googlebot.com.evil.example'] }, { 'googlebot.com.evil.example': ['203.0.113.9'] }),
      ),
    ).toBe('failed');
    expect(
      await verifyByDns(
        family('Googlebot'),
        '203.0.113.9',
        recorded({ '203.0.113.9': ['crawl.googlebot.com'] }, { 'crawl.googlebot.com': ['66.249.66.1'] }),
      ),
    ).toBe('failed');
    expect(await verifyByDns(family('Googlebot'), '203.0.113.9', recorded({}, {}))).toBe('failed');
  });

  it(`confirms ${RDNS_NAMES_CHECKED} distinct names of a PTR answer under the suffixes at most, whatever it holds`, async () => {
    const asked: string[] = [];
    const many = (names: string[], back: Record<string, string>): Resolver => ({
      reverse: async () => names,
      resolve: async (host) => (asked.push(host), back[host] ? [back[host]] : []),
    });
    const names = Array.from({ length: 60 }, (_, i) => `n${i}.crawl.amazonbot.amazon`);
    // Names outside the suffixes and repeats of a name take no place.
    const answer = ['x.example', 'N0.crawl.amazonbot.amazon.', ...names];
    expect(await verifyByDns(family('Amazonbot'), '198.51.100.60', many(answer, {}))).toBe('failed');
    expect(asked).toEqual(names.slice(0, RDNS_NAMES_CHECKED));
    // A name within the bound that resolves back verifies; one past it is never read.
    asked.length = 0;
    const within = { [names[RDNS_NAMES_CHECKED - 1]!]: '198.51.100.60' };
    expect(await verifyByDns(family('Amazonbot'), '198.51.100.60', many(names, within))).toBe('verified');
    const past = { [names[RDNS_NAMES_CHECKED]!]: '198.51.100.60' };
    expect(await verifyByDns(family('Amazonbot'), '198.51.100.60', many(names, past))).toBe('failed');
  });

  it('leaves the claim unverifiable after its time bound', async () => {
    const slow: Resolver = { reverse: () => new Promise(() => undefined), resolve: async () => [] };
    const started = Date.now();
    expect(await verifyByDns(family('Googlebot'), '66.249.66.1', slow, 50)).toBe('unverifiable');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('published address ranges', () => {
  it('matches IPv4, IPv6 and mapped addresses by binary search over merged prefixes', () => {
    const r = addressRanges(['66.249.64.0/19', '2001:4860:4801::/48', '5.39.1.224', '5.39.1.225', '10.0.0.0/8']);
    expect(r.has('66.249.66.1')).toBe(true);
    expect(r.has('::ffff:66.249.66.1')).toBe(true);
    expect(r.has('2001:4860:4801:10::1')).toBe(true);
    expect(r.has('5.39.1.225')).toBe(true);
    expect(r.has('5.39.1.226')).toBe(false);
    expect(r.has('66.249.96.1')).toBe(false);
    expect(r.has('2001:4860:4802::1')).toBe(false);
    expect(r.has('not-an-ip')).toBe(false);
  });

  it("ships the operators' lists for the families that publish them", () => {
    const ranges = rangesOf(shipped);
    for (const name of [
      'Googlebot',
      'Bingbot',
      'Applebot',
      'CCBot',
      'DuckDuckBot',
      'AhrefsBot',
      'TelegramBot',
      'Pingdom',
      'UptimeRobot',
      'facebookexternalhit',
    ]) {
      expect(ranges.get(name)?.size ?? 0, name).toBeGreaterThan(0);
    }
    expect(ranges.get('Googlebot')!.has('66.249.66.1')).toBe(true);
    // Every family whose claim is checked by ranges is named by some list.
    const listed = new Set(Object.values(shipped.lists).flatMap((l) => l.families));
    for (const f of families.filter((f) => f.verify === 'ip-ranges')) expect(listed.has(f.family), f.family).toBe(true);
  });

  it('reads an IPv4 address exactly where isIP does, without making a string', () => {
    const dotted = (a: number) => [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255].join('.');
    const odd = [
      '0.0.0.0',
      '255.255.255.255',
      '256.1.1.1',
      '1.2.3.256',
      '01.2.3.4',
      '1.2.3.00',
      '1.2.3',
      '1.2.3.4.5',
      '1..3.4',
    ];
    odd.push(
      '.1.2.3',
      '1.2.3.',
      ' 1.2.3.4',
      '1.2.3.4 ',
      '1.2.3.4/8',
      '::ffff:1.2.3.4',
      '\u0661.2.3.4',
      '1234.1.1.1',
      '',
      '.',
    );
    const random = Array.from({ length: 5000 }, (_, i) =>
      dotted(Math.floor(Math.random() * 2 ** 32) >>> (i % 3 === 0 ? 8 : 0)),
    );
    // Strings near addresses: a character changed somewhere.
    const near = random.slice(0, 2000).map((a, i) => {
      const at = i % a.length;
      return a.slice(0, at) + '0.9a '[i % 5] + a.slice(at + 1);
    });
    for (const ip of [...odd, ...random, ...near]) {
      const expected = isIP(ip) === 4 ? ip.split('.').reduce((n, o) => n * 256 + Number(o), 0) : -1;
      expect([ip, ipv4Number(ip)]).toEqual([ip, expected]);
    }
    expect([...random, ...near].filter((ip) => ipv4Number(ip) >= 0).length).toBeGreaterThan(5000);
  });

  it('keys networks by /24 and /64, and sites by /24 and /48', () => {
    expect(networkOf('203.0.113.77')).toBe('203.0.113.0/24');
    expect(networkOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(networkOf('::ffff:203.0.113.77')).toBe('203.0.113.0/24');
    expect(siteOf('203.0.113.77')).toBe('203.0.113.0/24');
    expect(siteOf('::ffff:203.0.113.77')).toBe('203.0.113.0/24');
    expect(siteOf('2001:db8:aaaa:f:1::1')).toBe('2001:db8:aaaa::/48');
    expect(siteOf('2001:0DB8:AAAA::1')).toBe('2001:db8:aaaa::/48');
  });

  it('asks PTR questions by the name RFC 1035 and RFC 3596 give', () => {
    for (const ip of ['52.70.240.171', '2001:db8:aaaa:f::1', '::1', '2001:db8::'])
      expect(reverseName(ip)).toBe(arpaOf(ip));
    expect(reverseName('::ffff:52.70.240.171')).toBe('171.240.70.52.in-addr.arpa');
  });
});

describe('the system resolver: silence and refusal are not "no such name"', () => {
  it('reports a dropped PTR query as a timeout (ETIMEOUT: unverifiable), an unknown name as ENOTFOUND (failed)', async () => {
    const dns = await startDnsResponder({ silent: ['a.a.a.a.8.b.d.0.1.0.0.2.ip6.arpa'] });
    try {
      const resolver = systemResolver([dns.address]);
      await expect(resolver.reverse('2001:db8:aaaa:1::1')).rejects.toMatchObject({ code: 'ETIMEOUT' });
      await expect(resolver.reverse('192.0.2.9')).rejects.toMatchObject({ code: 'ENOTFOUND' });
      expect(await verifyByDns(family('Amazonbot'), '192.0.2.9', resolver)).toBe('failed');
    } finally {
      await dns.close();
    }
  });

  it("a forward query never answered leaves the claim unverifiable: the name's silence is not its absence", async () => {
    const HOST = '52-70-240-171.crawl.amazonbot.amazon';
    const dns = await startDnsResponder({ ptr: { '52.70.240.171': [HOST] }, silent: ['crawl.amazonbot.amazon'] });
    try {
      // A bound past the resolver's own timeout: the resolver's answer decides, not this one.
      expect(await verifyByDns(family('Amazonbot'), '52.70.240.171', systemResolver([dns.address]), 10_000)).toBe(
        'unverifiable',
      );
      // A and AAAA go out together, in either order.
      expect([...dns.queries].sort((a, b) => a.type.localeCompare(b.type))).toEqual([
        { type: 'A', name: HOST },
        { type: 'AAAA', name: HOST },
        { type: 'PTR', name: arpaOf('52.70.240.171') },
      ]);
    } finally {
      await dns.close();
    }
  });

  it('a resolver that refuses (nothing listening) leaves the claim unverifiable, never failed', async () => {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const { port } = socket.address();
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    const resolver = systemResolver([`127.0.0.1:${port}`]);
    expect(await verifyByDns(family('Amazonbot'), '52.70.240.171', resolver)).toBe('unverifiable');
  });
});

describe('the bounded verifier', () => {
  function setup(resolver: Resolver, maxInFlight = 16) {
    const results: [string, Outcome][] = [];
    const v = createVerifier({
      resolver,
      ranges: rangesOf(shipped),
      maxInFlight,
      onResult: (_f, key, o) => results.push([key, o]),
    });
    return { v, results };
  }
  const never: Resolver = { reverse: () => new Promise(() => undefined), resolve: async () => [] };

  it('decides by ranges without any lookup', () => {
    const { v } = setup(never);
    expect(v.lookup(family('Googlebot'), '66.249.66.1', 'k')).toBe('verified');
    expect(v.lookup(family('TelegramBot'), '203.0.113.5', 'k')).toBe('failed');
    expect(v.lookups()).toBe(0);
  });

  it('caps lookups in flight and counts the rest unverifiable', () => {
    const { v } = setup(never, 4);
    const outcomes = Array.from({ length: 50 }, (_, i) => v.lookup(family('Googlebot'), `198.51.${i}.1`, `k${i}`));
    expect(outcomes.filter((o) => o === null)).toHaveLength(4);
    expect(outcomes.filter((o) => o === 'unverifiable')).toHaveLength(46);
    expect(v.lookups()).toBe(4);
    expect(v.inFlight()).toBe(4);
  });

  it('counts failures by network: an IPv6 client rotating addresses in its /64 causes RDNS_NETWORK_FAILURES lookups', async () => {
    let calls = 0;
    const failing: Resolver = { reverse: async () => (calls++, []), resolve: async () => [] };
    const { v, results } = setup(failing);
    for (let i = 1; i <= RDNS_NETWORK_FAILURES; i++) {
      expect(v.lookup(family('YandexBot'), `2001:db8:0:1::${i.toString(16)}`, `a${i}`)).toBeNull();
      await new Promise((r) => setImmediate(r));
    }
    expect(results.map(([, o]) => o)).toEqual(Array(RDNS_NETWORK_FAILURES).fill('failed'));
    // Past that, the network's other addresses are not looked up: failed, as its others were.
    for (let i = RDNS_NETWORK_FAILURES + 1; i < 2000; i++)
      expect(v.lookup(family('YandexBot'), `2001:db8:0:1::${i.toString(16)}`, `k${i}`)).toBe('failed');
    // The addresses that failed stay failed.
    expect(v.lookup(family('YandexBot'), '2001:db8:0:1::1', 'a1')).toBe('failed');
    expect(calls).toBe(RDNS_NETWORK_FAILURES);
  });

  it('never fails a crawler because a spoofer in its network failed: each address is checked on its own', async () => {
    const CRAWLER = '203.0.113.50';
    const dns: Resolver = {
      reverse: async (ip) => (ip === CRAWLER ? ['crawl-203-0-113-50.spider.yandex.com'] : []),
      resolve: async () => [CRAWLER],
    };
    const { v, results } = setup(dns);
    expect(v.lookup(family('YandexBot'), '203.0.113.51', 'spoofer')).toBeNull();
    await new Promise((r) => setImmediate(r));
    expect(v.lookup(family('YandexBot'), CRAWLER, 'crawler')).toBeNull();
    await new Promise((r) => setImmediate(r));
    expect(results).toEqual([
      ['spoofer', 'failed'],
      ['crawler', 'verified'],
    ]);
  });

  it('starts one lookup a network whatever the family: one address claiming sixteen families takes one slot', async () => {
    const never: Resolver = { reverse: () => new Promise(() => {}), resolve: () => new Promise(() => {}) };
    const { v } = setup(never);
    const rdnsFamilies = families.filter((f) => f.rdns?.length).slice(0, 16);
    expect(rdnsFamilies).toHaveLength(16);
    const answers = rdnsFamilies.map((f) => v.lookup(f, '203.0.113.5', `spoofer-${f.family}`));
    expect(answers[0]).toBeNull();
    expect(answers.slice(1)).toEqual(Array(15).fill('unverifiable'));
    expect(v.inFlight()).toBe(1);
    // A crawler from another network has its lookup.
    expect(v.lookup(family('YandexBot'), '198.51.100.7', 'crawler')).toBeNull();
    expect(v.inFlight()).toBe(2);
  });

  it("starts one lookup a /48 at a time: sixteen /64s of one site take one slot, another network's claim has its own", () => {
    const { v } = setup(never);
    const flood = Array.from({ length: 16 }, (_, i) => v.lookup(family('Amazonbot'), `2001:db8:aaaa:${i}::1`, `f${i}`));
    expect(flood[0]).toBeNull();
    expect(flood.slice(1)).toEqual(Array(15).fill('unverifiable'));
    expect(v.inFlight()).toBe(1);
    expect(v.lookup(family('Amazonbot'), '52.70.240.171', 'crawler')).toBeNull();
    expect(v.inFlight()).toBe(2);
    expect(v.stats()).toEqual({ lookups: 2, queries: 2, unchecked: { busy: 0, site_busy: 15, site_unanswered: 0 } });
  });

  it(`stops looking up a site after ${RDNS_SITE_UNANSWERED} unanswered lookups: its further claims cost no lookup, count unverifiable (never failed) and are counted unchecked`, async () => {
    let calls = 0;
    const silent: Resolver = {
      reverse: async (ip) => {
        calls++;
        if (ip.startsWith('2001:db8:aaaa:')) throw Object.assign(new Error('timeout'), { code: 'ETIMEOUT' });
        return [`${ip.replaceAll('.', '-')}.crawl.amazonbot.amazon`];
      },
      resolve: async (host) => [host.split('.')[0]!.replaceAll('-', '.')],
    };
    const { v, results } = setup(silent);
    for (let i = 1; i <= RDNS_SITE_UNANSWERED; i++) {
      expect(v.lookup(family('Amazonbot'), `2001:db8:aaaa:${i}::1`, `t${i}`)).toBeNull();
      await new Promise((r) => setImmediate(r));
    }
    expect(results.map(([, o]) => o)).toEqual(Array(RDNS_SITE_UNANSWERED).fill('unverifiable'));
    // Any address of the /48, any family: not looked up; a log group counts all its requests.
    expect(v.lookup(family('Amazonbot'), '2001:db8:aaaa:ffff::9', 'a')).toBe('unverifiable');
    expect(v.lookup(family('YandexBot'), '2001:db8:aaaa:1::1', 'b', 40)).toBe('unverifiable');
    expect(calls).toBe(RDNS_SITE_UNANSWERED);
    expect(v.stats().unchecked).toEqual({ busy: 0, site_busy: 0, site_unanswered: 41 });
    // Another site is looked up, and verified: one PTR query, an A and an AAAA.
    expect(v.lookup(family('Amazonbot'), '52.70.240.171', 'crawler')).toBeNull();
    await new Promise((r) => setImmediate(r));
    expect(results.at(-1)).toEqual(['crawler', 'verified']);
    expect(v.stats()).toMatchObject({ lookups: RDNS_SITE_UNANSWERED + 1, queries: RDNS_SITE_UNANSWERED + 3 });
  });

  it('counts a claim past the lookups in flight as unchecked (busy), by its requests', () => {
    const { v } = setup(never, 1);
    expect(v.lookup(family('Amazonbot'), '52.70.240.171', 'a')).toBeNull();
    expect(v.lookup(family('Amazonbot'), '198.51.100.7', 'b', 3)).toBe('unverifiable');
    expect(v.stats().unchecked).toEqual({ busy: 3, site_busy: 0, site_unanswered: 0 });
  });

  it('starts one lookup per network at a time and answers the same address from its cache', async () => {
    let calls = 0;
    const ok: Resolver = {
      reverse: async (ip) => (calls++, [`${ip.replaceAll('.', '-')}.spider.yandex.com`]),
      resolve: async (host) => [host.split('.')[0]!.replaceAll('-', '.')],
    };
    const { v, results } = setup(ok);
    expect(v.lookup(family('YandexBot'), '203.0.113.1', 'a')).toBeNull();
    expect(v.lookup(family('YandexBot'), '203.0.113.1', 'a')).toBeNull();
    expect(v.lookup(family('YandexBot'), '203.0.113.2', 'b')).toBe('unverifiable');
    await new Promise((r) => setImmediate(r));
    expect(results).toEqual([['a', 'verified']]);
    expect(v.lookup(family('YandexBot'), '203.0.113.1', 'a')).toBe('verified');
    expect(calls).toBe(1);
  });
});
