import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arpaOf, startDnsResponder, type DnsResponder } from '../helpers/dns-responder.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { METRICS_TOKEN, metric } from './probe.ts';
import { RDNS_NAMES_CHECKED, RDNS_SITE_UNANSWERED } from '../../api/telemetry/verification/verify.ts';

// Amazonbot is checked by reverse DNS only (no published ranges). A client whose own reverse zone
// drops PTR queries sends Amazonbot claims from sixteen /64s of its /48 (2001:db8:aaaa:0-f::), 16
// every 250 ms: before, each /64 held a lookup slot for its 2 s timeout, and a timeout was never
// remembered, so the 16 slots stayed theirs (709 claims unverifiable, the genuine crawler's 5 claims
// never looked up). Now a /48 has one lookup at a time and, after RDNS_SITE_UNANSWERED unanswered
// ones, none for a while. A PTR answer of many names under the suffix is confirmed for a few only.
// Every query goes to the test's responder on loopback (DNS_SERVERS), none off the machine.
const SILENT_ZONE = 'a.a.a.a.8.b.d.0.1.0.0.2.ip6.arpa';
const CRAWLER = '52.70.240.171';
const CRAWLER_HOST = '52-70-240-171.crawl.amazonbot.amazon';
const LATER_CRAWLER = '52.70.240.172';
const LATER_HOST = '52-70-240-172.crawl.amazonbot.amazon';
// A PTR answer of 60 names under Amazonbot's suffix, none of which resolves back.
const MANY_NAMES = '198.51.100.60';
const NAMES = Array.from({ length: 60 }, (_, i) => `n${i}.crawl.amazonbot.amazon`);
const AMAZONBOT =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36';

let dns: DnsResponder;
let server: ServerProcess;
beforeAll(async () => {
  dns = await startDnsResponder({
    silent: [SILENT_ZONE],
    ptr: { [CRAWLER]: [CRAWLER_HOST], [LATER_CRAWLER]: [LATER_HOST], [MANY_NAMES]: NAMES },
    hosts: { [CRAWLER_HOST]: [CRAWLER], [LATER_HOST]: [LATER_CRAWLER] },
  });
  server = await startServerProcess({
    DATA_DIR: ':memory:',
    METRICS_TOKEN,
    TRUST_PROXY: 'loopback',
    DNS_SERVERS: dns.address,
  });
});
afterAll(async () => {
  await server.stop();
  await dns.close();
});

/** GET / claiming Amazonbot, from `client` as the trusted loopback proxy forwards it. */
async function claim(client: string): Promise<void> {
  const res = await fetch(`${server.url}/`, { headers: { 'User-Agent': AMAZONBOT, 'X-Forwarded-For': client } });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
}
/** One wave of the flood: a claim from each /64 of the silent /60, from its `k`-th address. */
const wave = (k: number) =>
  Promise.all(Array.from({ length: 16 }, (_, i) => claim(`2001:db8:aaaa:${i.toString(16)}::${(k + 1).toString(16)}`)));
/** PTR queries for the silent zone the responder received (none answered). */
const silentQueries = () => dns.queries.filter((q) => q.type === 'PTR' && q.name.endsWith(SILENT_ZONE)).length;
/** Amazonbot's verification outcomes, request by request, as /bot-traffic.json reports them. */
const amazonbot = async () =>
  (
    (await (await fetch(`${server.url}/bot-traffic.json`)).json()) as {
      families: {
        family: string;
        verification: { method: string; verified: number; failed: number; unverifiable: number };
      }[];
    }
  ).families.find((f) => f.family === 'Amazonbot')?.verification ?? {
    method: 'reverse-dns',
    verified: 0,
    failed: 0,
    unverifiable: 0,
  };
/** A labelled sample of /metrics. */
async function unchecked(reason: string): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
  const line = (await res.text())
    .split('\n')
    .find((l) => l.startsWith(`agentnode_dns_unchecked_claims_total{reason="${reason}"} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a site whose reverse DNS never answers floods Amazonbot claims', () => {
  it('holds one lookup slot, not sixteen: the genuine crawler is verified during the flood, and the site is no longer looked up once its lookups went unanswered', async () => {
    const lookupsBefore = await metric(server, 'agentnode_dns_lookups_total');
    await wave(0);
    // The first wave's lookup is under way (its PTR query was dropped); the other 15 claims of the
    // /48 waited for no slot.
    await waitFor(() => unchecked('site_busy'), { until: (n) => n === 15, what: 'the 15 claims counted unchecked' });
    expect(await metric(server, 'agentnode_dns_lookups_total')).toBe(lookupsBefore + 1);
    await waitFor(silentQueries, { until: (n) => n === 1, what: "the flood's first PTR query" });

    // The crawler's claim meanwhile has its lookup and verifies, well before the flood's lookup
    // times out (2 s).
    const sent = Date.now();
    await claim(CRAWLER);
    await waitFor(amazonbot, { until: (v) => v.verified === 1, what: "the crawler's claim verified" });
    expect(Date.now() - sent).toBeLessThan(2000);
    // Its first proof announces the family.
    await server.waitForLog((l) => l.includes('"kind":"new-family"') && l.includes('"family":"Amazonbot"'));

    // The flood goes on, 16 claims every 250 ms, until the site's lookups went unanswered enough.
    let k = 1;
    await waitFor(async () => (await wave(k++), unchecked('site_unanswered')), {
      until: (n) => n > 0,
      intervalMs: 250,
      timeoutMs: 5000 * RDNS_SITE_UNANSWERED,
      what: 'the silent site no longer looked up',
    });
    expect(silentQueries()).toBe(RDNS_SITE_UNANSWERED);
    const lookups = await metric(server, 'agentnode_dns_lookups_total');
    expect(lookups).toBe(lookupsBefore + RDNS_SITE_UNANSWERED + 1);

    // Its further claims cost no lookup; each is counted, in /metrics and as unverifiable.
    const before = { counted: await unchecked('site_unanswered'), wall: await amazonbot() };
    for (let more = 0; more < 4; more++) await wave(k++);
    await waitFor(() => unchecked('site_unanswered'), {
      until: (n) => n === before.counted + 64,
      what: 'the 64 claims counted unchecked',
    });
    expect(await metric(server, 'agentnode_dns_lookups_total')).toBe(lookups);
    const wall = await waitFor(amazonbot, {
      until: (v) => v.unverifiable === before.wall.unverifiable + 64,
      what: "the flood's claims counted",
    });
    // Silence proves no spoof: none of the flood's claims is counted failed (Cosplay).
    console.log(`${16 * k} claims from the silent /48: ${silentQueries()} lookups; ${JSON.stringify(wall)}`);
    expect(wall).toEqual({ method: 'reverse-dns', verified: 1, failed: 0, unverifiable: 16 * k });

    // Another address of the crawler is looked up and verified after the flood.
    await claim(LATER_CRAWLER);
    await waitFor(amazonbot, { until: (v) => v.verified === 2, what: "the crawler's later claim verified" });
    expect(silentQueries()).toBe(RDNS_SITE_UNANSWERED);
  });
});

describe('a PTR answer of 60 names under the suffix', () => {
  it(`is confirmed forward for ${RDNS_NAMES_CHECKED} names at most, and /metrics counts every query the responder received`, async () => {
    const before = dns.queries.length;
    const was = await amazonbot();
    await claim(MANY_NAMES);
    await waitFor(amazonbot, { until: (v) => v.failed === was.failed + 1, what: 'the claim failed' });
    const asked = dns.queries.slice(before);
    expect(asked.filter((q) => q.type === 'PTR')).toEqual([{ type: 'PTR', name: arpaOf(MANY_NAMES) }]);
    expect(asked.filter((q) => q.type === 'A').map((q) => q.name)).toEqual(NAMES.slice(0, RDNS_NAMES_CHECKED));
    expect(asked.filter((q) => q.type === 'AAAA').map((q) => q.name)).toEqual(NAMES.slice(0, RDNS_NAMES_CHECKED));
    expect(asked).toHaveLength(1 + 2 * RDNS_NAMES_CHECKED);
    // Every query since the server started, dropped ones too, is counted once.
    await waitFor(() => metric(server, 'agentnode_dns_queries_total'), {
      until: (n) => n === dns.queries.length,
      what: `agentnode_dns_queries_total at the responder's ${dns.queries.length} queries`,
    });
  });
});
