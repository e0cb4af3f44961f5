import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../api/config.ts';
import { loadContent } from '../../api/content/load.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import { ALERT_LIMITS, createAlerts, type Alert, type AlertOptions } from '../../api/telemetry/alerts/alerts.ts';
import { createTelemetry, telemetryRulesOf } from '../../api/telemetry/telemetry.ts';
import type { Resolver } from '../../api/telemetry/verification/verify.ts';
import type { DirectoryFetcher } from '../../api/telemetry/web-bot-auth/directory-fetch.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { agentKey, CHROME, directoryAnswer, signedHeaders, WELL_KNOWN } from '../helpers/signed-agent.ts';
import { GOOGLEBOT, request } from '../helpers/telemetry.ts';
import { waitFor } from '../helpers/wait.ts';

/** A webhook receiver on loopback: what it was sent, and how many requests it held at once. */
interface Receiver {
  url: string;
  got: Alert[];
  maxConcurrent: number;
  /** Answers nothing while true (the sender's timeout must end each POST). */
  hang: boolean;
  /** Called as each request arrives. */
  onArrive?: (() => void) | undefined;
  close(): Promise<void>;
}
async function receiver(): Promise<Receiver> {
  let open = 0;
  const r: Receiver = { url: '', got: [], maxConcurrent: 0, hang: false, close: async () => {} };
  const server: Server = createServer((req: IncomingMessage, res) => {
    open++;
    r.maxConcurrent = Math.max(r.maxConcurrent, open);
    r.onArrive?.();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      r.got.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Alert);
      if (r.hang) return;
      open--;
      res.writeHead(204).end();
    });
    res.on('close', () => {
      if (r.hang) open--;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  r.close = () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve())));
  return r;
}

/** A logger whose lines are kept, to see what was logged at warn. */
function memoryLogger() {
  const lines: { level: number; msg: string; alert?: Alert }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

/** Alerts without a webhook whose window is a minute of `c`'s time, logging to `logger`. */
const minuteAlerts = (c: { now: () => Date }, logger: ReturnType<typeof memoryLogger>['logger']) =>
  createAlerts({
    tableFamilies: TABLE,
    logger,
    windowMs: 60_000,
    spoofThreshold: 1,
    maxQueue: 1,
    timeoutMs: 100,
    now: c.now,
  });

let hook: Receiver;
beforeAll(async () => {
  hook = await receiver();
});
afterEach(() => {
  hook.got.length = 0;
  hook.maxConcurrent = 0;
  hook.hang = false;
  hook.onArrive = undefined;
});
afterAll(async () => {
  await hook.close();
});

/** The bot table's families as the unit tests name them; any other name is one a client wrote. */
const TABLE = new Set(['GPTBot', 'ClaudeBot', 'Googlebot', 'Bingbot', 'Applebot', 'YandexBot']);

/** Alerts POSTed to the test's hook: an hour's window, a spoofing alert at the first failure, a queue of 100. */
const hookAlerts = (options: Partial<AlertOptions> = {}) =>
  createAlerts({
    tableFamilies: TABLE,
    webhookUrl: hook.url,
    logger: pino({ level: 'silent' }),
    windowMs: 3_600_000,
    spoofThreshold: 1,
    maxQueue: 100,
    timeoutMs: 100,
    ...options,
  });

const clock = (start = Date.parse('2026-11-24T12:00:00Z')) => {
  let t = start;
  return { now: () => new Date(t), advance: (ms: number) => void (t += ms) };
};

describe('alerts', () => {
  it('sends each kind once per family per window, to the webhook and to the log at warn', async () => {
    const c = clock();
    const { logger, lines } = memoryLogger();
    const alerts = createAlerts({
      tableFamilies: TABLE,
      webhookUrl: hook.url,
      logger,
      windowMs: 3_600_000,
      spoofThreshold: 3,
      maxQueue: 10,
      timeoutMs: 2000,
      now: c.now,
    });
    expect(alerts.newFamily('GPTBot', 'OpenAI', 'Eater')).toBe(true);
    expect(alerts.newFamily('GPTBot', 'OpenAI', 'Eater')).toBe(false);
    expect(alerts.newFamily('ClaudeBot', 'Anthropic', 'Eater')).toBe(true);
    expect(alerts.robots('GPTBot', 'OpenAI', '/trap/a')).toBe(true);
    expect(alerts.robots('GPTBot', 'OpenAI', '/trap/b')).toBe(false);
    // A spike: the third failure within the window raises it, the later ones do not.
    expect([
      alerts.failed('Googlebot', 'Google'),
      alerts.failed('Googlebot', 'Google'),
      alerts.failed('Googlebot', 'Google'),
      alerts.failed('Googlebot', 'Google', 10),
    ]).toEqual([false, false, true, false]);
    c.advance(59 * 60_000);
    expect(alerts.newFamily('GPTBot', 'OpenAI', 'Eater')).toBe(false);
    c.advance(60_000);
    expect(alerts.newFamily('GPTBot', 'OpenAI', 'Eater')).toBe(true);
    // A new window counts failures afresh: two are no spike.
    expect([alerts.failed('Googlebot', 'Google'), alerts.failed('Googlebot', 'Google')]).toEqual([false, false]);
    await alerts.idle();
    expect(hook.got.map((a) => `${a.kind} ${a.family}`)).toEqual([
      'new-family GPTBot',
      'new-family ClaudeBot',
      'robots GPTBot',
      'spoofing Googlebot',
      'new-family GPTBot',
    ]);
    expect(hook.got[3]).toMatchObject({ operator: 'Google', detail: { failed: 3, threshold: 3 }, windowMs: 3_600_000 });
    expect(hook.maxConcurrent).toBe(1);
    const warned = lines.filter((l) => l.level === 40 && l.alert);
    expect(warned.map((l) => l.alert!.kind)).toEqual(['new-family', 'new-family', 'robots', 'spoofing', 'new-family']);
    expect(alerts.stats()).toMatchObject({ raised: 5, sent: 5, failed: 0, dropped: 0 });
  });

  it('holds one POST in flight and at most ALERT_QUEUE_MAX waiting, ends each at its timeout, and only logs the rest', async () => {
    hook.hang = true;
    const { logger, lines } = memoryLogger();
    const alerts = hookAlerts({
      // Names of the table: names it does not know have a share of the queue of their own.
      tableFamilies: new Set(Array.from({ length: 10 }, (_, i) => `Bot-${i}`)),
      logger,
      maxQueue: 3,
      timeoutMs: 200,
    });
    // How many POSTs had ended (timed out) when each one arrived.
    const endedBefore: number[] = [];
    hook.onArrive = () => endedBefore.push(alerts.stats().failed);
    for (let i = 0; i < 10; i++) expect(alerts.newFamily(`Bot-${i}`, null, 'Bot')).toBe(true);
    // One in flight, three waiting, six past the queue.
    expect(alerts.stats()).toMatchObject({ inFlight: 1, queued: 3, dropped: 6 });
    // The hook never answers: idle() comes only because each POST ends at its timeout.
    await alerts.idle();
    expect(hook.got.map((a) => a.family)).toEqual(['Bot-0', 'Bot-1', 'Bot-2', 'Bot-3']);
    // One at a time: each POST went out only when the one before had ended.
    expect(endedBefore).toEqual([0, 1, 2, 3]);
    expect(alerts.stats()).toMatchObject({ raised: 10, sent: 0, failed: 4, dropped: 6, queued: 0, inFlight: 0 });
    // Every alert is logged, sent or not; so is each failed POST.
    expect(lines.filter((l) => l.alert).length).toBe(10);
    expect(lines.filter((l) => /not retried/.test(l.msg)).length).toBe(4);
  });

  it("queues a verified crawler's new-family alert in the place of the newest other one when the queue is full", async () => {
    hook.hang = true;
    const alerts = hookAlerts({ maxQueue: 3, timeoutMs: 200 });
    // A flood of names anyone can write: one in flight, the share of names the table does not know
    // (half of three places, rounded up) waiting, seven only logged.
    for (let i = 0; i < 10; i++) alerts.newFamily(`Bot-${i}`, null, 'Bot');
    expect(alerts.stats()).toMatchObject({ inFlight: 1, queued: 2, dropped: 7 });
    // Crawlers their verification proved fill the queue, then take the others' places, never each other's.
    for (const family of ['Googlebot', 'Bingbot', 'Applebot', 'YandexBot'])
      expect(alerts.newFamily(family, null, 'Crawler', true)).toBe(true);
    expect(alerts.stats()).toMatchObject({ queued: 3, dropped: 10 });
    await alerts.idle();
    expect(hook.got.map((a) => a.family)).toEqual(['Bot-0', 'Googlebot', 'Bingbot', 'Applebot']);
  });

  it("gives one client at most ALERT_LIMITS.queuedPerClient places in the webhook queue, whatever names it writes: another client's alert is queued", async () => {
    hook.hang = true;
    const { logger, lines } = memoryLogger();
    const table = new Set(Array.from({ length: 40 }, (_, i) => `Table-${i}`));
    const alerts = hookAlerts({ tableFamilies: table, logger });
    const share = ALERT_LIMITS.queuedPerClient;
    try {
      // One client names 30 of the table's families: one POST in flight, its share waiting, the rest only logged.
      for (let i = 0; i < 30; i++)
        expect(alerts.newFamily(`Table-${i}`, null, 'Bot', false, { client: 'flooder' })).toBe(true);
      expect(alerts.stats()).toMatchObject({ raised: 30, inFlight: 1, queued: share, dropped: 29 - share });
      expect(lines.filter((l) => /share of the webhook queue/.test(l.msg))).toHaveLength(29 - share);
      // Another client's alert, and a verified crawler's (never counted against a share), are queued.
      expect(alerts.newFamily('Table-30', null, 'Bot', false, { client: 'someone else' })).toBe(true);
      expect(alerts.newFamily('Table-31', null, 'Crawler', true, { client: 'flooder' })).toBe(true);
      expect(alerts.stats()).toMatchObject({ queued: share + 2, dropped: 29 - share });
      // As its alerts leave the queue, the client's places come back.
      await alerts.idle();
      expect(hook.got.map((a) => a.family)).toEqual([
        ...Array.from({ length: share + 1 }, (_, i) => `Table-${i}`),
        'Table-30',
        'Table-31',
      ]);
      expect(alerts.newFamily('Table-32', null, 'Bot', false, { client: 'flooder' })).toBe(true);
      expect(alerts.stats()).toMatchObject({ inFlight: 1, dropped: 29 - share });
    } finally {
      // Whatever failed, what is queued is sent before the next test reads the hook.
      await alerts.idle();
    }
  });

  it("gives names the table does not know, from however many clients, at most ALERT_LIMITS.queuedPoolShare of the webhook queue: a table family's alert is queued", async () => {
    hook.hang = true;
    const { logger, lines } = memoryLogger();
    const alerts = hookAlerts({ logger });
    const poolShare = Math.ceil(100 * ALERT_LIMITS.queuedPoolShare);
    try {
      // 15 clients, each within its own share, invent 120 names: one POST in flight, the pool's share waiting.
      for (let c = 0; c < 15; c++)
        for (let i = 0; i < ALERT_LIMITS.queuedPerClient; i++)
          alerts.newFamily(`invented-${c}-${i}`, null, 'Bot', false, { client: `client-${c}` });
      expect(alerts.stats()).toMatchObject({ raised: 120, inFlight: 1, queued: poolShare, dropped: 119 - poolShare });
      expect(lines.filter((l) => /fill their share of the webhook queue/.test(l.msg))).toHaveLength(119 - poolShare);
      // A table family's new-family alert, unverified, from yet another client, still finds a place.
      expect(alerts.newFamily('ClaudeBot', 'Anthropic', 'Eater', false, { client: 'client-99' })).toBe(true);
      expect(alerts.stats()).toMatchObject({ queued: poolShare + 1, dropped: 119 - poolShare });
      await alerts.idle();
      expect(hook.got.map((a) => a.family)).toContain('ClaudeBot');
    } finally {
      await alerts.idle();
    }
  });

  it("never refuses the table's families: a memory of their own, whatever clients write; other names' pairs at most ALERT_LIMITS.poolPairs, dropped past them (logged once a window) until old ones expire", () => {
    const c = clock();
    const { logger, lines } = memoryLogger();
    const alerts = minuteAlerts(c, logger);
    // Names clients wrote fill their memory, each from its own client (a line without an address).
    for (let i = 0; i < ALERT_LIMITS.poolPairs; i++) expect(alerts.newFamily(`Bot-${i}`, null, 'Bot')).toBe(true);
    expect(alerts.newFamily('One more', null, 'Bot')).toBe(false);
    expect(alerts.failed('One more', null)).toBe(false);
    expect(alerts.robots('And another', null, '/trap/a')).toBe(false);
    expect(alerts.stats().dropped).toBe(3);
    // Said in the log, once a window.
    expect(
      lines.filter((l) => /memory of alerts about names the bot table does not know is full/.test(l.msg)),
    ).toHaveLength(1);
    // Every kind of every table family is still raised, and spoofing first of all.
    for (const family of TABLE) {
      expect(alerts.failed(family, 'Operator'), family).toBe(true);
      expect(alerts.newFamily(family, 'Operator', 'Crawler'), family).toBe(true);
      expect(alerts.robots(family, 'Operator', '/trap/a'), family).toBe(true);
      expect(alerts.preference(family, 'Operator', '/a', 'train-ai=n'), family).toBe(true);
    }
    expect(alerts.stats()).toMatchObject({
      dropped: 3,
      remembered: { table: TABLE.size * 4, pool: ALERT_LIMITS.poolPairs },
    });
    // Nothing of the table's took a client's place either: theirs stay remembered within the window.
    expect(alerts.newFamily('Bot-0', null, 'Bot')).toBe(false);
    expect(alerts.stats().dropped).toBe(3);
    c.advance(60_000);
    expect(alerts.newFamily('One more', null, 'Bot')).toBe(true);
  });

  it("bounds one client's share of other names' pairs at ALERT_LIMITS.poolPairsPerClient, given back as its pairs expire", () => {
    const c = clock();
    const { logger, lines } = memoryLogger();
    const alerts = minuteAlerts(c, logger);
    const share = ALERT_LIMITS.poolPairsPerClient;
    // One client writes many names on a bait path: its share is raised, no more.
    const raised = Array.from({ length: share * 4 }, (_, i) =>
      alerts.robots(`Name-${i}`, null, '/trap/a', { client: 'client-a' }),
    );
    expect(raised.filter(Boolean)).toHaveLength(share);
    expect(raised.indexOf(false)).toBe(share);
    expect(
      lines.filter((l) => /share of alerts about names the bot table does not know is used up/.test(l.msg)),
    ).toHaveLength(1);
    // Another client, and the table's families, are not held back by it.
    expect(alerts.robots(`Name-${share}`, null, '/trap/a', { client: 'client-b' })).toBe(true);
    expect(alerts.robots('GPTBot', 'OpenAI', '/trap/a', { client: 'client-a' })).toBe(true);
    expect(alerts.stats().remembered).toEqual({ table: 1, pool: share + 1, clients: 2 });
    // Its pairs expire with the window, and its share with them.
    c.advance(60_000);
    expect(alerts.robots('Name-999', null, '/trap/a', { client: 'client-a' })).toBe(true);
    expect(alerts.stats().remembered).toEqual({ table: 1, pool: 1, clients: 1 });
  });

  it("keeps a name that claims a table family (its token as a client spelled it) with that family's pairs: once a window, however spelled, never refused", () => {
    const alerts = createAlerts({
      tableFamilies: new Set(['Collectd']),
      logger: pino({ level: 'silent' }),
      windowMs: 60_000,
      spoofThreshold: 1,
      maxQueue: 1,
      timeoutMs: 100,
    });
    for (let i = 0; i < ALERT_LIMITS.poolPairs; i++) alerts.robots(`Bot-${i}`, null, '/trap/a');
    expect(alerts.robots('Bot-x', null, '/trap/a')).toBe(false);
    const collectd = { known: 'Collectd' };
    expect(alerts.robots('COLLECTD', 'Collectd', '/trap/a', collectd)).toBe(true);
    expect(alerts.robots('collectd', 'Collectd', '/trap/b', collectd)).toBe(false);
    expect(alerts.robots('Collectd', 'Collectd', '/trap/c')).toBe(false);
    expect(alerts.newFamily('collectd', 'Collectd', 'Bot', false, collectd)).toBe(true);
    expect(alerts.failed('CollectD', 'Collectd', 1, collectd)).toBe(true);
    // A claim of a family the table does not hold is a name like any other.
    expect(alerts.robots('Made-up', null, '/trap/a', { known: 'Made-up' })).toBe(false);
    expect(alerts.stats().remembered).toMatchObject({ table: 3, pool: ALERT_LIMITS.poolPairs });
  });

  it('expires the oldest pair by when it was last raised, not when it was first: a pair raised again is the newest', () => {
    const c = clock();
    const alerts = createAlerts({
      tableFamilies: TABLE,
      logger: pino({ level: 'silent' }),
      windowMs: 60_000,
      spoofThreshold: 1,
      maxQueue: 1,
      timeoutMs: 100,
      now: c.now,
    });
    alerts.newFamily('Bot-0', null, 'Bot');
    c.advance(30_000);
    for (let i = 1; i < ALERT_LIMITS.poolPairs; i++) alerts.newFamily(`Bot-${i}`, null, 'Bot');
    c.advance(30_000);
    // Bot-0's window is over: raised again, it is the newest pair; the memory is full again.
    expect(alerts.newFamily('Bot-0', null, 'Bot')).toBe(true);
    expect(alerts.newFamily('One more', null, 'Bot')).toBe(false);
    const dropped = alerts.stats().dropped;
    // 30 s on, Bot-1 and the others raised with it expire; Bot-0 is remembered (not due: nothing dropped).
    c.advance(30_000);
    expect(alerts.newFamily('Bot-0', null, 'Bot')).toBe(false);
    expect(alerts.stats().dropped).toBe(dropped);
    expect(alerts.newFamily('One more', null, 'Bot')).toBe(true);
    expect(alerts.newFamily('Bot-1', null, 'Bot')).toBe(true);
    expect(alerts.stats().remembered).toMatchObject({ pool: 3 });
  });

  it('takes its settings within bounds only', () => {
    expect(loadConfig({}).ALERT_WEBHOOK_URL).toBeUndefined();
    expect(loadConfig({ ALERT_WEBHOOK_URL: '' }).ALERT_WEBHOOK_URL).toBeUndefined();
    expect(loadConfig({})).toMatchObject({
      ALERT_WINDOW_MS: 3_600_000,
      ALERT_SPOOF_THRESHOLD: 20,
      ALERT_QUEUE_MAX: 100,
      ALERT_TIMEOUT_MS: 5000,
    });
    for (const env of [
      { ALERT_WEBHOOK_URL: 'ftp://x.example/' },
      { ALERT_WEBHOOK_URL: 'not a url' },
      { ALERT_WINDOW_MS: '1000' },
      { ALERT_QUEUE_MAX: '0' },
      { ALERT_QUEUE_MAX: '100000' },
      { ALERT_TIMEOUT_MS: '600000' },
      { ALERT_SPOOF_THRESHOLD: '0' },
    ]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(/ALERT_/);
    }
  });
});

describe('alerts from telemetry', () => {
  /** Telemetry over the shipped content whose alerts go to the test's webhook. */
  async function alerting(
    spoofThreshold: number,
    resolver: Resolver,
    fetchDirectory: DirectoryFetcher = async () => Promise.reject(new Error('no key directories here')),
    webhook: { url: string; timeoutMs?: number } = { url: hook.url },
  ) {
    const rules = telemetryRulesOf(await loadContent('content'));
    const alerts = createAlerts({
      tableFamilies: rules.tableFamilies,
      webhookUrl: webhook.url,
      logger: pino({ level: 'silent' }),
      windowMs: 3_600_000,
      spoofThreshold,
      maxQueue: 100,
      timeoutMs: webhook.timeoutMs ?? 2000,
    });
    const t = await createTelemetry({
      funnelStepOf,
      ...rules,
      resolver,
      fetchDirectory,
      store: openMemoryStore().telemetry,
      logger: pino({ level: 'silent' }),
      flushMs: 60_000,
      alerts,
    });
    return { alerts, t };
  }

  it("keeps one address that writes the table's names to its share of the webhook queue: another address's new family still reaches it", async () => {
    const { alerts, t } = await alerting(5, { reverse: async () => [], resolve: async () => [] });
    try {
      const rules = telemetryRulesOf(await loadContent('content'));
      // Families no claim of which can be checked here: anyone's first claim announces them.
      const named = rules.families
        .filter(
          (f) =>
            f.verify === 'none' &&
            !f.robots_only &&
            f.kind !== 'tool' &&
            f.operator !== '(tool)' &&
            !f.weak &&
            !f.signature_agents?.length,
        )
        .map((f) => ({ family: f.family, ua: `Mozilla/5.0 (compatible; ${f.tokens[0]}/1.0)` }))
        .filter(({ family, ua }) => rules.classify(ua).family === family)
        .slice(0, 41);
      expect(named).toHaveLength(41);
      const base = { method: 'GET', host: 'site.example', path: '/', status: 200, durationMs: 1 };
      // All in one turn of the loop: nothing has left the queue when the other address comes.
      for (const { ua } of named.slice(0, 40)) t.observe({ ...base, userAgent: ua, remoteAddress: '203.0.113.9' });
      t.observe({ ...base, userAgent: named[40]!.ua, remoteAddress: '198.51.100.7' });
      const share = ALERT_LIMITS.queuedPerClient;
      expect(alerts.stats()).toMatchObject({ raised: 41, dropped: 40 - (share + 1) });
      await alerts.idle();
      expect(hook.got.map((a) => a.family)).toEqual([
        ...named.slice(0, share + 1).map((n) => n.family),
        named[40]!.family,
      ]);
    } finally {
      await alerts.idle();
      await t.close();
    }
  });

  it("counts a spoofing alert raised when a reverse-DNS lookup answers against its address's share of the webhook queue", async () => {
    // A webhook of this test's own that answers nothing: the first POST stays in flight throughout.
    const own = await receiver();
    own.hang = true;
    const resolver: Resolver = { reverse: async () => ['host.spoofer.example'], resolve: async () => ['203.0.113.9'] };
    const { alerts, t } = await alerting(1, resolver, undefined, { url: own.url, timeoutMs: 60_000 });
    try {
      const rules = telemetryRulesOf(await loadContent('content'));
      // Families proven by their reverse DNS only: each claim is settled when its lookup answers.
      const named = rules.families
        .filter((f) => f.verify === 'reverse-dns' && (f.rdns?.length ?? 0) > 0 && !f.signature_agents?.length)
        .map((f) => ({ family: f.family, ua: `Mozilla/5.0 (compatible; ${f.tokens[0]}/1.0)` }))
        .filter(({ family, ua }) => rules.classify(ua).known?.family === family)
        .slice(0, 13);
      expect(named).toHaveLength(13);
      const base = { method: 'GET', host: 'site.example', path: '/', status: 200, durationMs: 1 };
      // One claim at a time, each after the lookup before it answered (one lookup a site at a time).
      for (const [i, { ua }] of named.slice(0, 12).entries()) {
        t.observe({ ...base, userAgent: ua, remoteAddress: '203.0.113.9' });
        await waitFor(() => alerts.stats().raised, { until: (n) => n === i + 1, what: `spoofing alert ${i + 1}` });
      }
      const share = ALERT_LIMITS.queuedPerClient;
      expect(alerts.stats()).toMatchObject({ inFlight: 1, queued: share, dropped: 12 - 1 - share });
      // Another address's spoofing alert is queued, not dropped.
      t.observe({ ...base, userAgent: named[12]!.ua, remoteAddress: '198.51.100.7' });
      await waitFor(() => alerts.stats().raised, { until: (n) => n === 13, what: "the other address's alert" });
      expect(alerts.stats()).toMatchObject({ inFlight: 1, queued: share + 1, dropped: 12 - 1 - share });
    } finally {
      // Closed, the webhook fails the POST in flight and refuses the rest at once.
      await own.close();
      await alerts.idle();
      await t.close();
    }
  });

  it('raises a new family, a crawler on a bait path and a spike of spoofed claims, each once', async () => {
    const { alerts, t } = await alerting(5, { reverse: async () => [], resolve: async () => [] });
    const base = { method: 'GET', host: 'site.example', status: 200, durationMs: 1, remoteAddress: '192.0.2.1' };
    const GPT =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
    for (let i = 0; i < 3; i++) t.observe({ ...base, path: '/', userAgent: GPT });
    t.observe({ ...base, path: '/trap/x', userAgent: GPT });
    t.observe({ ...base, path: '/trap/y', userAgent: GPT });
    // Google-Extended is a robots.txt token no crawler sends: every claim of it fails at once.
    for (let i = 0; i < 12; i++)
      t.observe({ ...base, path: '/', userAgent: 'Mozilla/5.0 (compatible; Google-Extended)' });
    // A person on a bait path is presence, not a crawler breaking robots.txt.
    t.observe({
      ...base,
      path: '/trap/z',
      userAgent:
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36',
    });
    await alerts.idle();
    // A family whose every claim fails is no new family: its spoofing alert says what it is.
    expect(hook.got.map((a) => `${a.kind} ${a.family}`)).toEqual([
      'new-family GPTBot',
      'robots GPTBot',
      'spoofing Google-Extended',
    ]);
    expect(hook.got[1]!.detail).toEqual({ path: '/trap/x' });
    await t.close();
  });

  it("announces a crawler on its first verified claim: a spoofer's claims before it, failed or unverifiable, take no announcement", async () => {
    let lookups = 0;
    // One address of Google's by its PTR record and forward confirmation; no PTR record for the rest.
    const { alerts, t } = await alerting(1000, {
      reverse: async (ip) => (lookups++, ip === '192.0.2.66' ? ['crawl-192-0-2-66.googlebot.com'] : []),
      resolve: async (host) => (host === 'crawl-192-0-2-66.googlebot.com' ? ['192.0.2.66'] : []),
    });
    const from = hook.got.length;
    const googlebot = (remoteAddress: string) => t.observe(request({ userAgent: GOOGLEBOT, remoteAddress }));
    for (let i = 1; i <= 3; i++) googlebot(`198.51.${i}.7`);
    // Two at once from one network: the second is unverifiable while the first's lookup runs.
    googlebot('198.51.9.1');
    googlebot('198.51.9.2');
    await waitFor(() => t.snapshot().families.Googlebot?.failed, { until: (n) => n === 4, what: '4 failed claims' });
    expect(t.snapshot().families.Googlebot?.unverifiable).toBe(1);
    await alerts.idle();
    expect(hook.got.slice(from)).toEqual([]);
    // Google's own address, verified by its lookup: announced when the answer comes.
    googlebot('192.0.2.66');
    await waitFor(() => t.snapshot().families.Googlebot?.verified, {
      until: (n) => n === 1,
      what: 'the verified claim',
    });
    await alerts.idle();
    expect(hook.got.slice(from).map((a) => `${a.kind} ${a.family}`)).toEqual(['new-family Googlebot']);
    // And once only, however its next claims are answered.
    googlebot('66.249.66.1');
    await alerts.idle();
    expect(hook.got.slice(from)).toHaveLength(1);
    expect(lookups).toBe(5);
    await t.close();
  });

  it('raises the spoofing alert for a client rotating through its network: past its failed lookups, its claims fail', async () => {
    const { alerts, t } = await alerting(20, { reverse: async () => [], resolve: async () => [] });
    const from = hook.got.length;
    for (let i = 1; i <= 200; i++) {
      t.observe(request({ userAgent: GOOGLEBOT, remoteAddress: `198.51.100.${i}` }));
      // Each lookup answered before the next claim: the network's failures are counted one by one.
      await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => t.snapshot().families.Googlebot, {
      until: (f) => f !== undefined && f.failed + f.unverifiable === 200,
      what: 'every claim settled',
    });
    expect(t.snapshot().families.Googlebot).toMatchObject({ verified: 0, failed: 200, unverifiable: 0 });
    await alerts.idle();
    expect(hook.got.slice(from).map((a) => `${a.kind} ${a.family}`)).toEqual(['spoofing Googlebot']);
    await t.close();
  });

  it("keeps a spoofer's claims from saying anything of the crawler: its paths, hosts, traps and robots.txt alerts are the crawler's own", async () => {
    // Google's address by its PTR record and forward confirmation (outside the published ranges: a
    // lookup each); no PTR record for the spoofer's.
    const { alerts, t } = await alerting(1000, {
      reverse: async (ip) => (ip === '192.0.2.66' ? ['crawl-192-0-2-66.googlebot.com'] : []),
      resolve: async (host) => (host === 'crawl-192-0-2-66.googlebot.com' ? ['192.0.2.66'] : []),
    });
    const from = hook.got.length;
    const googlebot = (remoteAddress: string, path: string, host = 'site.example') =>
      t.observe(request({ userAgent: GOOGLEBOT, remoteAddress, path, host }));
    // The spoofer's first claims are checked (pending), the rest of its network's fail at once.
    for (let i = 0; i < 20; i++) googlebot(`198.51.100.${1 + (i % 7)}`, `/junk/${i}`, `junk${i}.example`);
    googlebot('198.51.100.9', '/trap/spoofed');
    await waitFor(() => t.snapshot().families.Googlebot, {
      until: (f) => f !== undefined && f.failed + f.unverifiable === 21,
      what: "the spoofer's 21 claims settled",
    });
    // Google's own requests, the first while its lookup runs, one of them on a bait path.
    googlebot('192.0.2.66', '/trap/real');
    for (let i = 0; i < 5; i++) googlebot('192.0.2.66', '/');
    await waitFor(() => t.snapshot().families.Googlebot?.verified, { until: (n) => n === 6, what: '6 verified' });
    const row = t.snapshot().families.Googlebot!;
    expect(row.requests).toBe(27);
    expect(row.paths).toEqual({ '/trap/real': 1, '/': 5 });
    expect(row.hosts).toEqual({ 'site.example': 6 });
    expect(row.baitHits).toBe(1);
    expect(row.violations).toBe(1);
    await alerts.idle();
    const got = hook.got.slice(from);
    expect(got.map((a) => `${a.kind} ${a.family}`).sort()).toEqual(['new-family Googlebot', 'robots Googlebot']);
    expect(got.find((a) => a.kind === 'robots')!.detail).toEqual({ path: '/trap/real' });
    await t.close();
  });

  it('announces a signed agent when a signature check verifies it: forged signatures before it take no announcement', async () => {
    const [key, forger] = await Promise.all([agentKey(), agentKey()]);
    // ChatGPT-User's registered directory (content/bot-families.yaml), answered here, listing only `key`.
    const fetched: string[] = [];
    const { alerts, t } = await alerting(1000, { reverse: async () => [], resolve: async () => [] }, async (url) => {
      fetched.push(url);
      const { headers, body } = directoryAnswer([{ ...key.publicJwk, kid: key.keyid }]);
      // As node:http gives them: header names in lower case.
      const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
      return { status: 200, headers: lower, body: Buffer.from(body) };
    });
    const from = hook.got.length;
    let nonce = 0;
    const signedGet = async (signer: typeof key) => {
      const h = await signedHeaders('http://site.example/llms.txt', signer, {
        signatureAgent: 'sig1="https://chatgpt.com"',
        nonce: `n-${nonce++}`,
      });
      t.observe(
        request({
          userAgent: CHROME,
          path: '/llms.txt',
          remoteAddress: '203.0.113.9',
          signature: {
            signature: h.Signature!,
            signatureInput: h['Signature-Input']!,
            signatureAgent: h['Signature-Agent'],
            target: '/llms.txt',
          },
        }),
      );
    };
    const verification = () => t.snapshot().families['ChatGPT-User'];
    for (let i = 0; i < 3; i++) await signedGet(forger);
    await waitFor(verification, { until: (f) => f?.failed === 3, what: '3 forged signatures failed' });
    await alerts.idle();
    expect(hook.got.slice(from)).toEqual([]);
    await signedGet(key);
    await waitFor(verification, { until: (f) => f?.verified === 1, what: 'the genuine signature verified' });
    await alerts.idle();
    expect(hook.got.slice(from).map((a) => `${a.kind} ${a.family}`)).toEqual(['new-family ChatGPT-User']);
    await signedGet(key);
    await waitFor(verification, { until: (f) => f?.verified === 2, what: 'the second genuine signature' });
    await alerts.idle();
    expect(hook.got.slice(from)).toHaveLength(1);
    expect(fetched).toEqual([`https://chatgpt.com${WELL_KNOWN}`]);
    await t.close();
  });
});

describe('alerts from the running server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ALERT_WEBHOOK_URL: hook.url });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('POSTs to ALERT_WEBHOOK_URL and logs at warn', async () => {
    const UA = 'Mozilla/5.0 (compatible; ClaudeBot/1.0; +claudebot@anthropic.com)';
    for (const path of ['/llms.txt', '/private-archive/a', '/private-archive/b'])
      await fetch(server.url + path, { headers: { 'User-Agent': UA } }).then((r) => r.arrayBuffer());
    await waitFor(() => hook.got.length >= 2, { what: 'two alerts at the webhook' });
    expect(hook.got.map((a) => `${a.kind} ${a.family}`)).toEqual(['new-family ClaudeBot', 'robots ClaudeBot']);
    await server.waitForLog((l) => /"level":40/.test(l) && /bot alert/.test(l) && /ClaudeBot/.test(l));
  });

  it('raises a training crawler on a path whose AI usage preference is train-ai=n, once a window', async () => {
    const UA = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
    for (const path of ['/whats-next', '/bot-wall.json', '/bot-wall.md'])
      await fetch(server.url + path, { headers: { 'User-Agent': UA } }).then((r) => r.arrayBuffer());
    await waitFor(() => hook.got.some((a) => a.kind === 'preference'), { what: 'a preference alert' });
    const raised = hook.got.filter((a) => a.family === 'GPTBot' && a.kind !== 'spoofing');
    expect(raised.map((a) => a.kind)).toEqual(['new-family', 'preference']);
    expect(raised[1]!.detail).toEqual({ path: '/bot-wall.json', usage: 'train-ai=n, search=y' });
  });
});
