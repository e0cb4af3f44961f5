import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent, type Content } from '../../api/content/load.ts';
import { asFamily } from '../../api/telemetry/classification/bot-lists.ts';
import { classificationOf, type Classification } from '../../api/telemetry/classification/classify.ts';
import { buildBotWall } from '../../api/documents/bot-wall.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';
import {
  count,
  emptySnapshot,
  farmScore,
  keepClock,
  LEDGER_LIMITS,
  LEDGER_SKEW_MS,
  ledgerRange,
  ledgerTime,
  mergeSnapshots,
  OTHER_FAMILIES,
  agePool,
  boundPool,
  poolCount,
  recentOf,
  DEFAULT_RETENTION,
  reviveSnapshot,
  reviveRow,
  setLedgerRetention,
  settle,
  type FamilyRow,
  type LedgerEvent,
  type TelemetrySnapshot,
} from '../../api/telemetry/ledger/ledger.ts';

let content: Content;
beforeAll(async () => {
  content = await loadContent('content');
  // The default retention these tests count against (it is process-wide, and files share a worker).
  setLedgerRetention(DEFAULT_RETENTION);
});
const links = { site: 'https://site.example', canon: 'https://canon.example' };
const bot = (family: string, cls: Classification['class'] = 'Eater'): Classification => ({
  bot: true,
  family,
  class: cls,
  known: null,
  verify: 'none',
});
const HUMAN: Classification = { bot: false, family: null, class: null, known: null, verify: 'none' };

/** A request's event as telemetry hands it to the ledger: with the funnel step its operation declares. */
const event = (over: Partial<LedgerEvent>): LedgerEvent =>
  withStep({
    at: new Date('2026-11-21T10:00:00Z'),
    method: 'GET',
    path: '/api/convert',
    status: 200,
    host: 'localhost',
    classification: bot('GPTBot'),
    verification: 'unverifiable',
    bait: false,
    disallowed: false,
    ...over,
  });
function withStep(e: LedgerEvent): LedgerEvent {
  const step = funnelStepOf(e.method, e.path);
  return step ? { ...e, step } : e;
}
/** A live request: counted at the server's clock, which is its own time. */
const live = (s: TelemetrySnapshot, e: LedgerEvent) => count(s, e, e.at);

describe('the ledger', () => {
  it('counts a bot request once with its status class, path, deep hit and funnel step', () => {
    const s = emptySnapshot(new Date());
    expect(live(s, event({}))).toBe(true);
    live(s, event({ path: '/doctrine/node-protocol', status: 404 }));
    live(s, event({ method: 'POST', path: '/api/citizenship/oath', status: 201 }));
    const row = s.families.GPTBot!;
    expect(row).toMatchObject({
      requests: 3,
      convertReads: 1,
      oaths: 1,
      deepHits: 2,
      status: { '2xx': 2, '4xx': 1 },
      unverifiable: 3,
    });
    expect(row.paths).toEqual({ '/api/convert': 1, '/doctrine/node-protocol': 1, '/api/citizenship/oath': 1 });
    expect(row.daily).toEqual({ '2026-11-21': 3 });
    expect(s.observedRequests).toBe(3);
    expect(farmScore(row)).toBe(3 + 2 * 2 + 10 + 50);
  });

  it('does not count humans, but counts a human in a bait path as presence', () => {
    const s = emptySnapshot(new Date());
    expect(live(s, event({ classification: HUMAN }))).toBe(false);
    expect(
      live(s, event({ classification: HUMAN, path: '/trap/x', bait: true, disallowed: true, verification: null })),
    ).toBe(true);
    expect(s.observedRequests).toBe(0);
    expect(s.presence.baitHits).toBe(1);
    expect(Object.values(s.families)[0]).toMatchObject({ class: 'Cosplay', baitHits: 1, violations: 0 });
  });

  it('settles verification outcomes that arrive later', () => {
    const s = emptySnapshot(new Date());
    live(s, event({ classification: bot('Googlebot', 'Crawler'), verification: null }));
    settle(s, 'Googlebot', 'failed', 1);
    expect(s.families.Googlebot).toMatchObject({ verified: 0, failed: 1, unverifiable: 0 });
  });

  it('keeps 48 hourly and 8 daily buckets', () => {
    const s = emptySnapshot(new Date());
    const start = Date.parse('2026-11-01T00:30:00Z');
    for (let h = 0; h < 24 * 12; h++) live(s, event({ at: new Date(start + h * 3_600_000) }));
    expect(Object.keys(s.families.GPTBot!.hourly)).toHaveLength(LEDGER_LIMITS.hours);
    expect(Object.keys(s.families.GPTBot!.daily)).toHaveLength(LEDGER_LIMITS.days);
    expect(Object.keys(s.families.GPTBot!.daily).sort().at(-1)).toBe('2026-11-12');
  });

  it('revives a ledger saved by version 1 (unverified, verifiable, no daily)', () => {
    const old = {
      version: 1,
      windowStartedAt: 'a',
      updatedAt: 'b',
      observedRequests: 2,
      presence: { namedBotHits: 2, baitHits: 0 },
      recent: [],
      families: {
        X: {
          family: 'X',
          class: 'Crawler',
          verifiable: true,
          requests: 2,
          firstSeen: 'a',
          lastSeen: 'b',
          paths: {},
          status: {},
          hosts: {},
          hourly: {},
          baitHits: 0,
          deepHits: 0,
          robotsFetches: 0,
          violations: 0,
          convertReads: 0,
          oaths: 0,
          messages: 0,
          verified: 1,
          unverified: 1,
        },
      },
    };
    const row = reviveSnapshot(old as unknown as TelemetrySnapshot).families.X!;
    expect(row).toMatchObject({ verified: 1, failed: 1, unverifiable: 0, daily: {}, verify: 'none' });
    expect(row).not.toHaveProperty('unverified');
  });
});

describe("the ledger's usage part: AI usage preferences and formats", () => {
  it('counts preferences broken, formats and Markdown tokens per family, and merges them across processes', () => {
    const a = emptySnapshot(new Date());
    live(a, event({ path: '/bot-wall.json', preferenceBroken: true, format: 'json' }));
    live(a, event({ path: '/whats-next', format: 'markdown', markdownTokens: 120 }));
    live(a, event({ path: '/whats-next', format: 'html' }));
    // A person's read is not counted; neither is a format on a request that is no bot's.
    live(a, event({ classification: HUMAN, format: 'markdown', markdownTokens: 5 }));
    expect(a.families.GPTBot!.usage).toEqual({
      preferenceBroken: 1,
      markdown: 1,
      html: 1,
      json: 1,
      markdownTokens: 120,
    });
    const b = emptySnapshot(new Date());
    live(b, event({ path: '/bot-wall', preferenceBroken: true, format: 'markdown', markdownTokens: 30 }));
    // A row saved before the usage part existed merges as zeros.
    const old = emptySnapshot(new Date());
    live(old, event({}));
    delete old.families.GPTBot!.usage;
    const merged = mergeSnapshots(a, [b, old]);
    expect(merged.families.GPTBot!.usage).toEqual({
      preferenceBroken: 2,
      markdown: 2,
      html: 1,
      json: 1,
      markdownTokens: 150,
    });
    expect(a.families.GPTBot!.usage!.markdown).toBe(1);
    const wall = buildBotWall(content, merged, links, new Date());
    expect(wall.botTraffic.families.find((f) => f.family === 'GPTBot')!.usage).toEqual({
      preferenceBroken: 2,
      formats: { markdown: 2, html: 1, json: 1 },
      markdownTokens: 150,
    });
  });
});

describe('the ledger under a hostile client', () => {
  /** Every bound at its worst: more families than allowed, each with more long paths and hosts than kept, over more hours and days than kept. */
  function worst(): TelemetrySnapshot {
    const s = emptySnapshot(new Date('2026-11-01T00:00:00Z'));
    const long = (prefix: string, i: number) => `${prefix}${i}-${'x'.repeat(15_000)}`;
    const start = Date.parse('2026-11-01T00:00:00Z');
    for (let f = 0; f < 300; f++) {
      for (let p = 0; p < 60; p++) {
        const at = new Date(start + ((f * 60 + p) % (24 * 10)) * 3_600_000);
        live(
          s,
          event({
            at,
            classification: bot(long(`Family-${f}-`, f)),
            path: long('/p', p),
            host: long('h', p),
            status: 200 + (p % 4) * 100,
          }),
        );
      }
    }
    return s;
  }

  it('cuts stored paths, hosts and names, folds families past the bound into one row, bounds paths per family', () => {
    const s = worst();
    const rows = Object.values(s.families);
    // Names the bot table does not know: the pool's rows, the first to earn them kept (no later name earns more).
    expect(rows.length).toBe(LEDGER_LIMITS.poolRows + 1);
    expect(s.families[OTHER_FAMILIES]!.requests).toBe((300 - LEDGER_LIMITS.poolRows) * 60);
    for (const r of rows) {
      expect(r.family.length).toBeLessThanOrEqual(LEDGER_LIMITS.nameChars);
      expect(Object.keys(r.paths).length).toBeLessThanOrEqual(LEDGER_LIMITS.pathsPerFamily);
      expect(Object.keys(r.hosts).length).toBeLessThanOrEqual(LEDGER_LIMITS.hostsPerFamily);
      for (const p of Object.keys(r.paths)) expect(p.length).toBeLessThanOrEqual(LEDGER_LIMITS.pathChars);
      for (const h of Object.keys(r.hosts)) expect(h.length).toBeLessThanOrEqual(LEDGER_LIMITS.hostChars);
    }
    expect(s.observedRequests).toBe(300 * 60);
  });

  it('stays within the documented worst case with every family of the bot table filled too (8.3 MiB saved, 14.7 MiB /bot-wall.json)', () => {
    const now = new Date('2026-11-21T23:30:00Z');
    const table = [
      ...content.botFamilies.families.filter((f) => f.kind !== 'operator').map(classificationOf),
      ...content.botFamiliesGenerated.families.map((g) => classificationOf(asFamily(g))),
    ];
    const s = emptySnapshot(now);
    const long = (prefix: string, i: number) => `${prefix}${i}-${'x'.repeat(200)}`;
    for (const c of table)
      // Every hourly bucket, every daily one, 20 long paths (16 kept), 7 long hosts (5 kept), every status class.
      for (let h = 0; h < 8 * 24; h++) {
        if (h >= LEDGER_LIMITS.hours && h % 24 !== 0) continue;
        const at = new Date(now.getTime() - h * 3_600_000);
        const e = event({ at, classification: c, path: long('/p', h % 20), host: long('h', h % 7) });
        // Verified claims fill the paths and hosts (a failed one's are not its family's); failed ones too.
        count(s, { ...e, status: 200 + (h % 4) * 100, verification: h % 3 === 0 ? 'failed' : 'verified' }, now);
      }
    for (let i = 0; i < 400; i++)
      live(
        s,
        event({ at: now, classification: bot(`junk${i}-${'y'.repeat(80)}`), client: `c${i}`, path: long('/q', i) }),
      );
    expect(Object.values(s.families).filter((r) => !r.pooled).length).toBeGreaterThanOrEqual(table.length);
    expect(Object.values(s.families).filter((r) => r.pooled).length).toBe(LEDGER_LIMITS.poolRows);
    const saved = Buffer.byteLength(JSON.stringify(s));
    const wall = Buffer.byteLength(JSON.stringify(buildBotWall(content, s, links, now)));
    console.log(`every table family filled: saved ${saved} B, /bot-wall.json ${wall} B`);
    expect(saved).toBeLessThan(8.6 * 1024 * 1024);
    expect(wall).toBeLessThan(15 * 1024 * 1024);
  });

  it('holds at most twice LEDGER_LIMITS.recent requests, and the wall shows the last of them, newest first', () => {
    const s = emptySnapshot(new Date());
    const at = new Date('2026-11-21T10:00:00Z');
    for (let i = 0; i < 1000; i++) {
      live(s, event({ at, path: `/p/${i}` }));
      expect(s.recent.length).toBeLessThan(2 * LEDGER_LIMITS.recent);
    }
    const last = Array.from({ length: LEDGER_LIMITS.recent }, (_, i) => `/p/${1000 - LEDGER_LIMITS.recent + i}`);
    expect(recentOf(s).map((r) => r.path)).toEqual(last);
    const wall = buildBotWall(content, s, links, at);
    expect((wall.recent as { path: string }[]).map((r) => r.path)).toEqual([...last].reverse());
    expect(mergeSnapshots(s, [s]).recent).toHaveLength(LEDGER_LIMITS.recent);
  });

  it('stays within the worst-case sizes the README states (saved ledger 600 KB, /bot-wall.json 650 KB)', () => {
    const s = worst();
    const saved = Buffer.byteLength(JSON.stringify(s));
    const wall = Buffer.byteLength(JSON.stringify(buildBotWall(content, s, links, new Date('2026-11-10T12:00:00Z'))));
    expect(saved).toBeLessThan(600 * 1024);
    expect(wall).toBeLessThan(650 * 1024);
    // Several processes' ledgers merged keep the same family bound.
    expect(Object.keys(mergeSnapshots(s, [worst(), worst()]).families).length).toBe(LEDGER_LIMITS.poolRows + 1);
  });
});

describe('the bot wall document', () => {
  it('lists families by requests with hourly and daily series, class, operator, verification and robots counts', () => {
    const s = emptySnapshot(new Date('2026-11-21T00:00:00Z'));
    const now = new Date('2026-11-21T12:30:00Z');
    for (let i = 0; i < 5; i++)
      live(
        s,
        event({
          at: new Date('2026-11-21T10:10:00Z'),
          classification: bot('ClaudeBot'),
          path: i === 0 ? '/robots.txt' : '/x',
          verification: 'failed',
        }),
      );
    for (let i = 0; i < 3; i++)
      live(s, event({ at: new Date('2026-11-21T11:10:00Z'), classification: bot('GPTBot'), verification: 'verified' }));
    live(
      s,
      event({
        at: new Date('2026-11-21T11:20:00Z'),
        classification: HUMAN,
        path: '/trap/x',
        bait: true,
        disallowed: true,
        verification: null,
      }),
    );
    const wall = buildBotWall(content, s, links, now);
    const families = wall.botTraffic.families;
    expect(families.map((f) => f.family)).toEqual(['ClaudeBot', 'GPTBot']);
    // Its failed verifications are spoofed requests of its name: counted as Cosplay request by request,
    // never turning the family itself into Cosplay, and saying nothing of it (the spoofer's fetch of
    // robots.txt is not the crawler's, its paths take none of the crawler's slots).
    expect(families[0]).toMatchObject({
      class: 'Eater',
      verification: { method: 'none', verified: 0, failed: 5, unverifiable: 0 },
      robotsTxtFetches: 0,
      topPaths: [],
      disallowedHits: 0,
      hourly: [{ hour: '2026-11-21T10:00:00Z', requests: 5 }],
      daily: [{ day: '2026-11-21', requests: 5 }],
    });
    expect(families[1]).toMatchObject({ class: 'Eater', hourly: [{ hour: '2026-11-21T11:00:00Z', requests: 3 }] });
    // ClaudeBot's five spoofed requests and the browser caught in a bait path.
    expect(wall.meters.class_counts).toMatchObject({ Cosplay: 6, Eater: 3 });
    // Among the recent requests too, a spoofed one is shown as what it is.
    expect(wall.recent.filter((r) => r.family === 'ClaudeBot').map((r) => r.class)).toEqual(Array(5).fill('Cosplay'));
    // Meters and charts agree: the bots' hourly series add up to the observed-bot-requests meter
    // (a browser caught in a bait path is presence, counted apart).
    const hourlyTotal = families.reduce((n, f) => n + f.hourly.reduce((m, h) => m + h.requests, 0), 0);
    expect(hourlyTotal).toBe(wall.meters.observed_bot_requests);
    expect(families.reduce((n, f) => n + f.requests, 0)).toBe(wall.meters.observed_bot_requests);
    expect(wall.meters.net_hits).toBe(wall.meters.observed_bot_requests + 1);
  });
});

describe("the ledger keeps the server's clock", () => {
  const now = new Date('2026-11-24T10:21:00Z');
  const GOOGLE = bot('Googlebot', 'Crawler');
  /** 58 records of year 9999, one an hour: 58 hourly buckets over 3 days. With 8 more days, every bucket of the old ledger. */
  const far = [
    ...Array.from({ length: 58 }, (_, i) => new Date(Date.UTC(9999, 0, 1, i))),
    ...Array.from({ length: 8 }, (_, d) => new Date(Date.UTC(9999, 1, 1 + d))),
  ];
  const hoursOf = (s: TelemetrySnapshot) => Object.keys(s.families.Googlebot?.hourly ?? {});
  const daysOf = (s: TelemetrySnapshot) => Object.keys(s.families.Googlebot?.daily ?? {});

  it('takes records from the start of its oldest daily bucket to 5 minutes ahead, and counts one ahead as now', () => {
    const { from, to } = ledgerRange(now);
    expect(new Date(from).toISOString()).toBe(`2026-11-${24 - (LEDGER_LIMITS.days - 1)}T00:00:00.000Z`);
    expect(to - now.getTime()).toBe(LEDGER_SKEW_MS);
    expect(ledgerTime(new Date('9999-12-31T23:59:59Z'), now)).toBeNull();
    expect(ledgerTime(new Date('1970-01-01T00:00:00Z'), now)).toBeNull();
    expect(ledgerTime(new Date(to + 1), now)).toBeNull();
    expect(ledgerTime(new Date(from - 1), now)).toBeNull();
    expect(ledgerTime(new Date('not a date'), now)).toBeNull();
    expect(ledgerTime(new Date(to), now)).toEqual(now);
    expect(ledgerTime(new Date(now.getTime() + 60_000), now)).toEqual(now);
    expect(ledgerTime(new Date(from), now)).toEqual(new Date(from));
  });

  it('changes nothing for records of 9999, 1970 or just past now + 5 min, and never empties the wall', () => {
    const s = emptySnapshot(now);
    live(s, event({ at: new Date(now.getTime() - 60_000), classification: GOOGLE }));
    const before = structuredClone(s);
    const hostile = [
      ...far,
      new Date('1970-01-01T00:00:00Z'),
      new Date(0),
      new Date(now.getTime() + LEDGER_SKEW_MS + 1),
    ];
    for (const at of hostile) expect(count(s, event({ at, classification: GOOGLE }), now)).toBe(false);
    expect(s).toEqual(before);
    // A live request after them shows in the last hour and today, as the wall reads them.
    live(s, event({ at: now, classification: GOOGLE }));
    const google = buildBotWall(content, s, links, now).botTraffic.families.find((f) => f.family === 'Googlebot')!;
    expect(google.hourly).toEqual([{ hour: '2026-11-24T10:00:00Z', requests: 2 }]);
    expect(google.daily).toEqual([{ day: '2026-11-24', requests: 2 }]);
  });

  it('counts a record just inside now + 5 min at the clock: no bucket ahead of it', () => {
    const s = emptySnapshot(now);
    const late = new Date('2026-11-24T10:59:00Z');
    expect(count(s, event({ at: new Date(late.getTime() + LEDGER_SKEW_MS), classification: GOOGLE }), late)).toBe(true);
    expect(hoursOf(s)).toEqual(['2026-11-24T10:00:00Z']);
    expect(s.families.Googlebot!.lastSeen).toBe(late.toISOString());
    expect(s.updatedAt).toBe(late.toISOString());
    // Just before midnight, the day is today's too.
    const midnight = new Date('2026-11-24T23:58:00Z');
    expect(
      count(s, event({ at: new Date(midnight.getTime() + LEDGER_SKEW_MS), classification: GOOGLE }), midnight),
    ).toBe(true);
    expect(daysOf(s)).toEqual(['2026-11-24']);
  });

  it("keeps the clock's last 48 hours and 8 days, whatever order in-range records come in", () => {
    const s = emptySnapshot(now);
    const { from } = ledgerRange(now);
    // Every hour of the range, newest first: the live hour must stay, the hours before the last 48 go.
    for (let t = Math.floor(now.getTime() / 3_600_000) * 3_600_000; t >= from; t -= 3_600_000)
      count(s, event({ at: new Date(t), classification: GOOGLE }), now);
    expect(hoursOf(s)).toHaveLength(LEDGER_LIMITS.hours);
    expect(hoursOf(s)).toContain('2026-11-24T10:00:00Z');
    expect(hoursOf(s).sort()[0]).toBe('2026-11-22T11:00:00Z');
    expect(daysOf(s).sort()).toEqual(Array.from({ length: LEDGER_LIMITS.days }, (_, i) => `2026-11-${17 + i}`));
  });

  it('brings a saved ledger with buckets ahead of the clock back to it on load, so live traffic shows', () => {
    // As the old ledger saved it after the attack: every bucket in 9999 (or past), the live ones pushed out.
    const s = emptySnapshot(new Date('2026-11-20T00:00:00Z'));
    for (const at of far) live(s, event({ at, classification: GOOGLE }));
    s.families.Googlebot!.hourly['+010000-01-01T00:00:00Z'] = 1;
    s.families.Googlebot!.daily['2026-11-01'] = 3;
    expect(hoursOf(s).every((h) => h > now.toISOString() || h.startsWith('+'))).toBe(true);
    const loaded = keepClock(reviveSnapshot(JSON.parse(JSON.stringify(s)) as TelemetrySnapshot), now);
    expect(hoursOf(loaded)).toEqual([]);
    expect(daysOf(loaded)).toEqual([]);
    expect(loaded.updatedAt).toBe(now.toISOString());
    expect(loaded.families.Googlebot!.lastSeen).toBe(now.toISOString());
    expect(loaded.recent).toEqual([]);
    for (let i = 0; i < 3; i++) count(loaded, event({ at: now, classification: GOOGLE }), now);
    const google = buildBotWall(content, loaded, links, now).botTraffic.families.find((f) => f.family === 'Googlebot')!;
    expect(google.hourly).toEqual([{ hour: '2026-11-24T10:00:00Z', requests: 3 }]);
    expect(google.daily).toEqual([{ day: '2026-11-24', requests: 3 }]);
    expect(loaded.recent.map((r) => r.at)).toEqual([now.toISOString(), now.toISOString(), now.toISOString()]);
  });
});

describe('families no client can crowd out', () => {
  const NOW = new Date('2026-11-21T10:00:00Z');
  const known = (family: string) => classificationOf(content.botFamilies.families.find((f) => f.family === family)!);
  const REAL = ['GPTBot', 'ClaudeBot', 'PerplexityBot', 'Bytespider'];
  /** A request of `c` from `client` at `at` (a live one: the server's clock is its time). */
  const from = (s: TelemetrySnapshot, c: Classification, client: string, at = NOW) =>
    live(s, event({ at, classification: c, client, path: '/' }));
  const junk = (i: number) => bot(`junk${i}-bot`, 'Bot');

  it('gives the table families their own rows after 400 invented families from one address, which earn at most four rows', () => {
    const s = emptySnapshot(NOW);
    for (let i = 0; i < 400; i++) from(s, junk(i), 'one');
    for (const name of REAL) from(s, known(name), 'crawler');
    for (const name of REAL) expect(s.families[name]).toMatchObject({ requests: 1 });
    const pooled = Object.values(s.families).filter((r) => r.pooled);
    expect(pooled.length).toBe(LEDGER_LIMITS.clientUnitsPerHour);
    expect(s.families[OTHER_FAMILIES]!.requests).toBe(400 - LEDGER_LIMITS.clientUnitsPerHour);
    // The next hour the same address earns four more units, no more: its own share is capped.
    for (let i = 0; i < 400; i++) from(s, junk(i), 'one', new Date(NOW.getTime() + 3_600_000));
    expect(Object.values(s.families).filter((r) => r.pooled).length).toBe(LEDGER_LIMITS.clientUnitsPerHour);
    expect(Object.values(s.pool!).reduce((n, e) => n + e.count, 0)).toBe(2 * LEDGER_LIMITS.clientUnitsPerHour);
  });

  it("keeps a client's units of an hour across requests counted out of time order, for the latest LEDGER_LIMITS.tallyHours hours", () => {
    const s = emptySnapshot(NOW);
    const HOUR = 3_600_000;
    const clock = new Date(NOW.getTime() + 10 * HOUR);
    // A log's lines, counted in the order its batches arrived: hour 0, hour 1, hour 0 again.
    const logged = (name: number, hour: number) =>
      count(
        s,
        event({ at: new Date(NOW.getTime() + hour * HOUR), classification: junk(name), client: 'one', path: '/' }),
        clock,
      );
    const units = () => Object.values(s.pool ?? {}).reduce((n, e) => n + e.count, 0);
    for (let i = 0; i < 8; i++) logged(i, 0);
    for (let i = 8; i < 16; i++) logged(i, 1);
    for (let i = 16; i < 24; i++) logged(i, 0);
    expect(units()).toBe(2 * LEDGER_LIMITS.clientUnitsPerHour);
    // The tallies of the latest hours are kept, no more: past them the earliest hour's goes, and
    // that hour gives units afresh.
    for (let hour = 2; hour <= LEDGER_LIMITS.tallyHours; hour++) logged(100 + hour, hour);
    logged(200, 1);
    expect(units()).toBe(2 * LEDGER_LIMITS.clientUnitsPerHour + LEDGER_LIMITS.tallyHours - 1);
    logged(201, 0);
    expect(units()).toBe(2 * LEDGER_LIMITS.clientUnitsPerHour + LEDGER_LIMITS.tallyHours);
  });

  it('bounds the pool against invented families from many addresses; a name seen from more clients takes the weakest row', () => {
    const s = emptySnapshot(NOW);
    for (let i = 0; i < 400; i++) from(s, junk(i), `client-${i}`);
    for (const name of REAL) from(s, known(name), 'crawler');
    expect(Object.values(s.families).filter((r) => r.pooled).length).toBe(LEDGER_LIMITS.poolRows);
    expect(Object.keys(s.pool!).length).toBeLessThanOrEqual(LEDGER_LIMITS.poolCandidates);
    for (const name of REAL) {
      expect(s.families[name]).toMatchObject({ requests: 1 });
      expect(s.families[name]!.pooled).toBeUndefined();
    }
    // An unknown crawler from five addresses: its first request shares the other row, then it earns its own.
    const real = bot('NewCrawler', 'Bot');
    for (let i = 0; i < 5; i++) from(s, real, `crawler-${i}`);
    expect(s.families.NewCrawler?.pooled).toBe(true);
    expect(poolCount(s, 'NewCrawler')).toBeGreaterThan(1);
    expect(Object.values(s.families).filter((r) => r.pooled).length).toBe(LEDGER_LIMITS.poolRows);
  });

  it("gives a new crawler's clients their units after more clients than an hour's tally holds", () => {
    const s = emptySnapshot(NOW);
    for (let i = 0; i < LEDGER_LIMITS.poolClients + 10; i++) from(s, junk(i % 300), `flood-${i}`);
    const real = bot('NewCrawler', 'Bot');
    for (let i = 0; i < 20; i++) from(s, real, `crawler-${i}`);
    expect(s.families.NewCrawler?.pooled).toBe(true);
    expect(poolCount(s, 'NewCrawler')).toBeGreaterThan(1);
  });

  it('keeps "(other families)" within a row\'s bounds of paths and hosts, however many pool rows fold into it, live or loaded', () => {
    const s = emptySnapshot(NOW);
    // Each name from two clients (a unit each: a row), each request on a path and host of its own.
    for (let i = 0; i < 2000; i++)
      for (const c of ['a', 'b'])
        live(
          s,
          event({
            at: NOW,
            classification: bot(`churn${i}`, 'Bot'),
            client: `${c}-${i}`,
            path: `/p${i}${c}`,
            host: `h${i}${c}`,
          }),
        );
    const other = s.families[OTHER_FAMILIES]!;
    const total = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);
    expect(Object.keys(other.paths).length).toBeLessThanOrEqual(LEDGER_LIMITS.pathsPerFamily);
    expect(Object.keys(other.hosts).length).toBeLessThanOrEqual(LEDGER_LIMITS.hostsPerFamily);
    // Every request the row holds is in its paths and hosts still.
    expect(total(other.paths)).toBe(other.requests);
    expect(total(other.hosts)).toBe(other.requests);
    // A ledger saved with a row past its bounds is brought back to them on load, its counts kept.
    const saved = structuredClone(s);
    for (let i = 0; i < 500; i++) saved.families[OTHER_FAMILIES]!.paths[`/saved${i}`] = 1;
    saved.families[OTHER_FAMILIES]!.requests += 500;
    const loaded = keepClock(saved, NOW).families[OTHER_FAMILIES]!;
    expect(Object.keys(loaded.paths).length).toBeLessThanOrEqual(LEDGER_LIMITS.pathsPerFamily);
    expect(total(loaded.paths)).toBe(loaded.requests);
  });

  it("gives a pool row that a table family's name takes the table's class, operator and method, its counts kept", () => {
    const s = emptySnapshot(NOW);
    // A name a client wrote before it was read as a claim (or the table gained since), earned from two clients.
    for (const client of ['a', 'b']) from(s, bot('GPTBot', 'Bot'), client);
    expect(s.families.GPTBot).toMatchObject({ pooled: true, class: 'Bot', operator: null, verify: 'none' });
    from(s, known('GPTBot'), 'crawler');
    expect(s.families.GPTBot).toMatchObject({ class: 'Eater', operator: 'OpenAI', verify: 'ip-ranges', requests: 3 });
    expect(s.families.GPTBot!.pooled).toBeUndefined();
  });

  it('ages quiet pool rows out with the retention, never the table families', () => {
    const s = emptySnapshot(NOW);
    from(s, junk(1), 'a');
    from(s, known('GPTBot'), 'b');
    const later = new Date(NOW.getTime() + (LEDGER_LIMITS.days + 1) * 86_400_000);
    agePool(s, later);
    expect(s.families['junk1-bot']).toBeUndefined();
    expect(s.pool!['junk1-bot']).toBeUndefined();
    expect(s.families.GPTBot).toBeDefined();
  });

  it('merges several processes: every table family kept, the pool within its bound by their summed evidence', () => {
    const a = emptySnapshot(NOW);
    const b = emptySnapshot(NOW);
    // Seen by both processes, from three clients each: the most evidence.
    for (let i = 0; i < 3; i++) {
      from(a, bot('SharedCrawler'), `a-shared-${i}`);
      from(b, bot('SharedCrawler'), `b-shared-${i}`);
    }
    for (let i = 0; i < 200; i++) from(a, junk(i), `a-${i}`);
    for (let i = 200; i < 400; i++) from(b, junk(i), `b-${i}`);
    for (const name of REAL) from(b, known(name), 'crawler');
    const merged = mergeSnapshots(a, [b]);
    expect(Object.values(merged.families).filter((r) => r.pooled).length).toBe(LEDGER_LIMITS.poolRows);
    for (const name of REAL) expect(merged.families[name]).toMatchObject({ requests: 1 });
    expect(merged.families.SharedCrawler).toMatchObject({ requests: 6 });
    expect(poolCount(merged, 'SharedCrawler')).toBe(6);
    const total = Object.values(merged.families).reduce((n, r) => n + r.requests, 0);
    expect(total).toBe(400 + 6 + REAL.length);
  });

  it('sorts a ledger saved before the pool: the table families kept, the rest in the pool within its bound', () => {
    const s = emptySnapshot(NOW);
    delete s.pool;
    const row = (family: string) =>
      reviveRow({ family, firstSeen: NOW.toISOString(), lastSeen: NOW.toISOString() } as FamilyRow);
    for (let i = 0; i < 127; i++) s.families[`junk${i}`] = row(`junk${i}`);
    s.families.GPTBot = row('GPTBot');
    boundPool(s, (name) => name === 'GPTBot');
    expect(s.families.GPTBot?.pooled).toBeUndefined();
    expect(Object.values(s.families).filter((r) => r.pooled).length).toBe(LEDGER_LIMITS.poolRows);
    expect(s.families[OTHER_FAMILIES]).toBeDefined();
  });
});
