import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import { createTelemetry, telemetryRulesOf, type IngestLine } from '../../api/telemetry/telemetry.ts';
import { RDNS_NETWORK_FAILURES, type Resolver } from '../../api/telemetry/verification/verify.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';
import { waitFor } from '../helpers/wait.ts';

async function telemetry(resolver: Resolver) {
  const content = await loadContent('content');
  return createTelemetry({
    funnelStepOf,
    ...telemetryRulesOf(content),
    resolver,
    fetchDirectory: async () => Promise.reject(new Error('no key directories here')),
    store: openMemoryStore().telemetry,
    logger: pino({ level: 'silent' }),
    flushMs: 60_000,
  });
}

const GOOGLE = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const line = (over: Partial<IngestLine>): IngestLine => ({
  method: 'GET',
  path: '/api/convert',
  host: 'cdn.example',
  userAgent: GOOGLE,
  status: 200,
  ...over,
});

describe('CDN log lines with a client address', () => {
  it('verifies each line as a live request: ranges first, reverse DNS bounded, and never stores the address', async () => {
    let lookups = 0;
    const resolver: Resolver = {
      reverse: async (ip) => (lookups++, ip === '203.0.113.7' ? ['crawl-203-0-113-7.googlebot.com'] : []),
      resolve: async () => ['203.0.113.7'],
    };
    const t = await telemetry(resolver);
    expect(
      t.ingest([
        line({ clientAddress: '66.249.66.1' }),
        line({ clientAddress: '203.0.113.7' }),
        line({ clientAddress: '198.51.100.9' }),
        line({}),
      ]),
    ).toBe(4);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const row = t.snapshot().families.Googlebot!;
    // In Google's published ranges; confirmed by DNS; refused by DNS; a line without an address.
    expect(row).toMatchObject({ requests: 4, verified: 2, failed: 1, unverifiable: 1 });
    expect(lookups).toBe(2);
    const saved = JSON.stringify(t.snapshot());
    for (const ip of ['66.249.66.1', '203.0.113.7', '198.51.100.9']) expect(saved).not.toContain(ip);
    await t.close();
  });

  it("keeps what a batch's lines say of the crawler while their address's lookup runs, and adds it once verified", async () => {
    const t = await telemetry({
      reverse: async (ip) => (ip === '203.0.113.7' ? ['crawl-203-0-113-7.googlebot.com'] : []),
      resolve: async () => ['203.0.113.7'],
    });
    // 1,000 lines of one address in one batch: all come while its lookup runs. Ten paths, each
    // fetched a hundred times, one of them a trap.
    const path = (i: number) => (i % 10 === 9 ? '/trap/x' : `/p${i % 10}`);
    const lines = Array.from({ length: 1000 }, (_, i) => line({ clientAddress: '203.0.113.7', path: path(i) }));
    expect(t.ingest(lines)).toBe(1000);
    expect(t.snapshot().families.Googlebot!.paths).toEqual({});
    await waitFor(() => t.snapshot().families.Googlebot!.verified, { until: (n) => n === 1000, what: 'the lookup' });
    const row = t.snapshot().families.Googlebot!;
    expect(Object.values(row.paths).reduce((a, b) => a + b, 0)).toBe(1000);
    expect(row.paths['/trap/x']).toBe(100);
    expect(row.baitHits).toBe(100);
    await t.close();
  });

  it('caps reverse-DNS lookups in flight when 2,000 addresses claim to be Googlebot', async () => {
    const pending: (() => void)[] = [];
    const resolver: Resolver = {
      reverse: () => new Promise((resolve) => pending.push(() => resolve([]))),
      resolve: async () => [],
    };
    const t = await telemetry(resolver);
    const lines = Array.from({ length: 2000 }, (_, i) =>
      line({ clientAddress: `2001:db8:${(i % 50).toString(16)}::${i.toString(16)}` }),
    );
    t.ingest(lines);
    expect(t.dnsLookups()).toEqual({ started: 16, inFlight: 16 });
    const settle = async () => {
      for (const done of pending.splice(0)) done();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    };
    await settle();
    // Their networks (/64) failed once; each is looked up again, one address at a time, until it has
    // failed RDNS_NETWORK_FAILURES times, and then never within the hour, however often they come back.
    const again = lines.filter((_, i) => i % 50 < 16);
    for (let round = 0; round < RDNS_NETWORK_FAILURES + 1; round++) {
      t.ingest(again);
      await settle();
    }
    expect(t.dnsLookups().started).toBe(16 * RDNS_NETWORK_FAILURES);
    t.ingest(again);
    expect(t.dnsLookups()).toEqual({ started: 16 * RDNS_NETWORK_FAILURES, inFlight: 0 });
    expect(t.snapshot().families.Googlebot!.requests).toBe(2000 + 640 * (RDNS_NETWORK_FAILURES + 2));
    await t.close();
  });
});

describe("the operator's own traffic", () => {
  it('is never counted: health probes and our CLIs, on any path, live or from logs', async () => {
    const t = await telemetry({ reverse: async () => [], resolve: async () => [] });
    const own = [
      'kube-probe/1.29',
      'ELB-HealthChecker/2.0',
      'GoogleHC/1.0',
      'agent-node-ingest-logs',
      'agent-node-verify-receipts',
    ];
    // A bait path too: a probe is the operator's, never a browser caught in a trap.
    expect(
      t.ingest(
        own.flatMap((userAgent) => [line({ userAgent, path: '/trap/x' }), line({ userAgent, path: '/api/convert' })]),
      ),
    ).toBe(0);
    for (const userAgent of own)
      t.observe({
        method: 'GET',
        path: '/livez',
        host: '127.0.0.1:4321',
        userAgent,
        status: 200,
        durationMs: 0.1,
        remoteAddress: '10.0.0.1',
      });
    expect(Object.keys(t.snapshot().families)).toEqual([]);
    expect(t.snapshot().presence).toEqual({ namedBotHits: 0, baitHits: 0 });
    // The same requests from a bot are counted: the test can fail.
    expect(t.ingest([line({ userAgent: 'Mozilla/5.0 (compatible; FooCrawlerZ/3.1; +https://foo.example/bot)' })])).toBe(
      1,
    );
    await t.close();
  });

  it("is the operator's only from its side of the network, its probes' published ranges or on a probe path", async () => {
    const t = await telemetry({ reverse: async () => [], resolve: async () => [] });
    const live = (userAgent: string, remoteAddress: string, path = '/trap/x') =>
      t.observe({
        method: 'GET',
        path,
        host: '127.0.0.1:4321',
        userAgent,
        status: 200,
        durationMs: 0.1,
        remoteAddress,
      });
    // Its own: private, shared and loopback addresses; Google's probe ranges; any address on /livez.
    live('kube-probe/1.29', '10.1.2.3');
    live('kube-probe/1.29', '100.64.0.7');
    live('ELB-HealthChecker/2.0', '::ffff:172.31.5.6');
    live('GoogleHC/1.0', '35.191.8.9');
    live('GoogleHC/1.0', '203.0.113.9', '/livez');
    expect(t.ingest([line({ userAgent: 'kube-probe/1.29', path: '/trap/y', clientAddress: '192.168.1.1' })])).toBe(0);
    expect(Object.keys(t.snapshot().families)).toEqual([]);
    // From the internet the same tokens are a client's claim: counted, as a bot, never verified.
    live('kube-probe/1.29 GPTBot/1.2', '203.0.113.10');
    live('GoogleHC/1.0', '198.51.100.4', '/');
    expect(
      t.ingest([line({ userAgent: 'agent-node-verify-receipts', path: '/trap/z', clientAddress: '2001:db8::5' })]),
    ).toBe(1);
    const families = t.snapshot().families;
    expect(Object.keys(families).sort()).toEqual(['GoogleHC', 'agent-node-verify-receipts', 'kube-probe']);
    expect(families['kube-probe']).toMatchObject({ requests: 1, class: 'Bot' });
    expect(t.snapshot().presence.baitHits).toBe(2);
    await t.close();
  });
});
