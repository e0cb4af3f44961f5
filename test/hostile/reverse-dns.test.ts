import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arpaOf, startDnsResponder, type DnsResponder } from '../helpers/dns-responder.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { METRICS_TOKEN, metric, pool } from './probe.ts';
import { RDNS_NETWORK_FAILURES } from '../../api/telemetry/verification/verify.ts';

// Many client addresses claiming to be Googlebot. Reverse-DNS verification runs
// at most RDNS_MAX_IN_FLIGHT (16) lookups at once and one per network (/24) at a time, and counts
// failures by network, so rotating addresses inside a network costs RDNS_NETWORK_FAILURES lookups
// an hour, not one per address (before any bound: 2,000 addresses, 1,992 lookups); a failure is
// only its own address's, so a spoofer never fails the crawler beside it. Lookups are counted by
// agentnode_dns_lookups_total. They go to a DNS responder of the test's own on loopback
// (DNS_SERVERS), never to the machine's resolver; it knows one Googlebot address and answers
// NXDOMAIN for the rest (a fast failure, the case the network cache and the in-flight cap bound).
const VERIFIED = '127.10.200.1';
const VERIFIED_HOST = 'crawl-127-10-200-1.googlebot.com';
// A crawler whose network a spoofer shares: the spoofer's failure must not fail it.
const NEIGHBOUR = '127.10.201.1';
const NEIGHBOUR_HOST = 'crawl-127-10-201-1.googlebot.com';
const SPOOFER = '127.10.201.9';
let dns: DnsResponder;
let server: ServerProcess;
beforeAll(async () => {
  dns = await startDnsResponder({
    ptr: { [VERIFIED]: [VERIFIED_HOST], [NEIGHBOUR]: [NEIGHBOUR_HOST] },
    hosts: { [VERIFIED_HOST]: [VERIFIED], [NEIGHBOUR_HOST]: [NEIGHBOUR] },
  });
  server = await startServerProcess({ DATA_DIR: ':memory:', METRICS_TOKEN, DNS_SERVERS: dns.address });
});
afterAll(async () => {
  await server.stop();
  await dns.close();
});
/** PTR questions the responder received so far. */
const ptrQueries = () => dns.queries.filter((q) => q.type === 'PTR');

const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
/** Waits until the responder has received `count` PTR questions in all (a lookup is counted as it starts, its query follows). */
const waitForQueries = (count: number) =>
  waitFor(() => ptrQueries().length, { until: (n) => n >= count, what: `${count} PTR queries at the responder` });

/** GET / from a given loopback address (Linux routes all of 127/8 to lo), claiming Googlebot. */
function claim(localAddress: string): Promise<number> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/', localAddress, headers: { 'User-Agent': GOOGLEBOT, Connection: 'close' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The wall's verification counts of Googlebot's claims. */
const googlebotVerification = async () =>
  (
    (await (await fetch(`${server.url}/bot-wall.json`)).json()) as {
      species: { species: string; verification: unknown }[];
    }
  ).species.find((s) => s.species === 'Googlebot')?.verification as
    { verified: number; unverified: number } | undefined;

describe('verification asks the resolver DNS_SERVERS names', () => {
  it('a Googlebot claim from an address the loopback responder knows is looked up there, once, and verified', async () => {
    const before = dns.queries.length;
    expect(await claim(VERIFIED)).toBe(200);
    // The lookup runs beside the request: wait for the wall to count its outcome.
    const googlebot = async () =>
      (
        (await (await fetch(`${server.url}/bot-wall.json`)).json()) as {
          species: { species: string; verification: unknown }[];
        }
      ).species.find((s) => s.species === 'Googlebot')?.verification;
    const verification = await waitFor(googlebot, {
      until: (v) => typeof v === 'object',
      what: "the wall's Googlebot verification",
    });
    // No resolver but this one could verify a loopback address as Googlebot's.
    expect(verification).toEqual({ verified: 1, unverified: 0 });
    const asked = dns.queries.slice(before);
    expect(asked.filter((q) => q.type === 'PTR')).toEqual([{ type: 'PTR', name: arpaOf(VERIFIED) }]);
    // Forward confirmation: the PTR name's A (and AAAA) records, asked of the same responder.
    expect(asked.filter((q) => q.type === 'A')).toEqual([{ type: 'A', name: VERIFIED_HOST }]);
    // A second claim from the same address is answered from the cache: no query.
    const after = dns.queries.length;
    expect(await claim(VERIFIED)).toBe(200);
    await (await fetch(`${server.url}/llms.txt`)).arrayBuffer();
    expect(dns.queries.length).toBe(after);
  });
});

describe('a spoofer beside a crawler', () => {
  it("fails alone: a crawler in the spoofer's network is still looked up and verified", async () => {
    const before = (await googlebotVerification())!;
    const ptrBefore = ptrQueries().length;
    expect(await claim(SPOOFER)).toBe(200);
    await waitFor(() => googlebotVerification(), {
      until: (v) => v!.unverified === before.unverified + 1,
      what: "the spoofer's claim counted unverified",
    });
    expect(await claim(NEIGHBOUR)).toBe(200);
    const after = await waitFor(() => googlebotVerification(), {
      until: (v) => v!.verified + v!.unverified === before.verified + before.unverified + 2,
      what: "the crawler's claim counted",
    });
    expect(after).toEqual({ verified: before.verified + 1, unverified: before.unverified + 1 });
    expect(ptrQueries().slice(ptrBefore)).toEqual([
      { type: 'PTR', name: arpaOf(SPOOFER) },
      { type: 'PTR', name: arpaOf(NEIGHBOUR) },
    ]);
  });
});

describe('reverse-DNS lookups under address rotation', () => {
  it('2,000 addresses in 8 networks claiming Googlebot start at most RDNS_NETWORK_FAILURES lookups a network, never more than 16 at once', async () => {
    const before = await metric(server, 'agentnode_dns_lookups_total');
    const ptrBefore = ptrQueries().length;
    let maxInFlight = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) maxInFlight = Math.max(maxInFlight, await metric(server, 'agentnode_verifications_in_flight'));
    })();
    const statuses = new Set<number>();
    // 127.10.n.h: 8 networks of 250 addresses, taken in turn so every network is hit all along.
    await pool(2000, 16, async (i) => void statuses.add(await claim(`127.10.${i % 8}.${1 + Math.floor(i / 8)}`)));
    watching = false;
    await watcher;
    const started = (await metric(server, 'agentnode_dns_lookups_total')) - before;
    console.log(`2,000 addresses in 8 networks: ${started} lookups, at most ${maxInFlight} in flight`);
    expect([...statuses]).toEqual([200]);
    // Lookups run one per network at a time; a request arriving while its network's lookup runs
    // does not start another, and RDNS_NETWORK_FAILURES failures close the network for an hour.
    expect(started).toBeGreaterThanOrEqual(1);
    expect(started).toBeLessThanOrEqual(8 * RDNS_NETWORK_FAILURES);
    // Every lookup reached the loopback responder.
    await waitForQueries(ptrBefore + started);
    expect(ptrQueries().length - ptrBefore).toBe(started);
    expect(maxInFlight).toBeLessThanOrEqual(16);
    // The claims were counted, as failed or unverifiable, none verified.
    const wall = await (await fetch(`${server.url}/bot-wall.json`)).json();
    expect(JSON.stringify(wall)).toContain('Googlebot');
  });

  it('2,000 addresses in 2,000 networks, twice: never more than 16 lookups in flight, at most one a network over both rounds', async () => {
    const address = (i: number) => `127.${20 + (i >> 8)}.${i & 255}.1`;
    const before = await metric(server, 'agentnode_dns_lookups_total');
    const ptrBefore = ptrQueries().length;
    let maxInFlight = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) maxInFlight = Math.max(maxInFlight, await metric(server, 'agentnode_verifications_in_flight'));
    })();
    await pool(2000, 16, async (i) => void expect(await claim(address(i))).toBe(200));
    const first = (await metric(server, 'agentnode_dns_lookups_total')) - before;
    await pool(2000, 16, async (i) => void expect(await claim(address(i))).toBe(200));
    watching = false;
    await watcher;
    const both = (await metric(server, 'agentnode_dns_lookups_total')) - before;
    console.log(
      `2,000 networks: ${first} lookups in the first round, ${both - first} in the second, at most ${maxInFlight} in flight`,
    );
    expect(first).toBeGreaterThan(0);
    // Requests never wait for a lookup, so without the cap every new network would add one in flight
    // (hundreds, when the resolver is slow); past 16 a claim is counted unverifiable instead.
    expect(maxInFlight).toBeLessThanOrEqual(16);
    // A failed network is cached and never looked up again; a network skipped at the cap may be
    // looked up in the second round.
    expect(both).toBeLessThanOrEqual(2000);
    // Every lookup reached the loopback responder: a lookup's PTR query is sent before it counts as done.
    await waitForQueries(ptrBefore + both);
    expect(ptrQueries().length - ptrBefore).toBe(both);
  });
});
