import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent, type Content } from '../../api/content/load.ts';
import { buildBotWall } from '../../api/documents/bot-wall.ts';
import { buildRobots } from '../../api/documents/crawl.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';
import { BotWallSchema } from '../../api/schemas/responses.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import type { Classification } from '../../api/telemetry/classification/classify.ts';
import {
  count,
  emptySnapshot,
  LEDGER_LIMITS,
  mergeSnapshots,
  type LedgerEvent,
  type TelemetrySnapshot,
} from '../../api/telemetry/ledger/ledger.ts';
import { createRobotsJudge, robotsVersion } from '../../api/telemetry/robots/robots.ts';
import { createTelemetry, telemetryRulesOf, type IngestLine } from '../../api/telemetry/telemetry.ts';

let content: Content;
beforeAll(async () => {
  content = await loadContent('content');
});
const links = { site: 'https://site.example', canon: 'https://canon.example' };
const OWN = [
  '# ours',
  'User-agent: *',
  'Disallow: /trap/',
  '',
  'User-agent: GPTBot',
  'Disallow: /drafts/',
  'Allow: /drafts/public/',
  '',
].join('\n');
const bot = (family: string): Classification => ({ bot: true, family, class: 'Eater', known: null, verify: 'none' });
const T0 = new Date('2026-11-21T10:00:00Z');
/** What the robots parts add at worst to the saved ledger and to /bot-wall.json, on top of the ledger's other bounds (README "Limits"). */
const ROBOTS_WORST = { saved: 300 * 1024, wall: 300 * 1024 };

/** Counts a request of `family` to `path`, judged by `judge` (live: the service's own robots.txt). */
function request(
  s: TelemetrySnapshot,
  judge: ReturnType<typeof createRobotsJudge>,
  family: string,
  path: string,
  minute: number,
  host: string | null = null,
) {
  const at = new Date(T0.getTime() + minute * 60_000);
  const e: LedgerEvent = {
    at,
    method: 'GET',
    path,
    status: 200,
    host: host ?? 'localhost',
    classification: bot(family),
    verification: 'unverifiable',
    bait: false,
    disallowed: false,
    robots: judge.judge(host, path, [family]),
  };
  return count(s, e, at);
}

describe('the ledger counts robots.txt per family', () => {
  it('counts each broken Disallow line per family with its line, version, paths and whether robots.txt was fetched first', () => {
    const judge = createRobotsJudge(OWN);
    const s = emptySnapshot(T0);
    request(s, judge, 'GPTBot', '/drafts/a', 0);
    request(s, judge, 'GPTBot', '/robots.txt', 1);
    request(s, judge, 'GPTBot', '/drafts/a', 2);
    request(s, judge, 'GPTBot', '/drafts/b', 3);
    request(s, judge, 'GPTBot', '/drafts/public/x', 4);
    // GPTBot's own group replaces `*`: /trap/ is allowed to it.
    request(s, judge, 'GPTBot', '/trap/x', 5);
    request(s, judge, 'ClaudeBot', '/trap/x', 6);
    request(s, judge, 'ClaudeBot', '/drafts/a', 7);
    const gpt = s.families.GPTBot!.robots!;
    expect(gpt).toMatchObject({
      judged: 6,
      violations: 3,
      afterFetch: 2,
      fetchedAt: { site: '2026-11-21T10:01:00.000Z' },
    });
    expect(Object.values(gpt.rules)).toEqual([
      {
        host: 'site',
        version: robotsVersion(OWN),
        line: 6,
        rule: 'Disallow: /drafts/',
        agent: 'gptbot',
        requests: 3,
        afterFetch: 2,
        paths: { '/drafts/a': 2, '/drafts/b': 1 },
      },
    ]);
    const claude = s.families.ClaudeBot!.robots!;
    expect(claude).toMatchObject({ judged: 2, violations: 1, afterFetch: 0 });
    expect(Object.values(claude.rules)).toMatchObject([
      { line: 3, rule: 'Disallow: /trap/', agent: '*', requests: 1, paths: { '/trap/x': 1 } },
    ]);

    const wall = buildBotWall(content, s, links, T0);
    const row = wall.botTraffic.families.find((f) => f.family === 'GPTBot')!;
    expect(row.robotsTxt).toMatchObject({
      compliance: 'violating',
      judged: 6,
      violations: 3,
      violationsAfterFetch: 2,
      fetchedRobotsTxt: true,
      firstFetch: '2026-11-21T10:01:00.000Z',
    });
    expect(row.robotsTxt.rules[0]).toMatchObject({
      line: 6,
      rule: 'Disallow: /drafts/',
      paths: [
        { path: '/drafts/a', requests: 2 },
        { path: '/drafts/b', requests: 1 },
      ],
    });
    expect(wall.robotsTxt.versions).toEqual([{ host: 'site', version: robotsVersion(OWN) }]);
    expect(wall.species.find((f) => f.species === 'ClaudeBot')!.robots).toMatchObject({
      compliance: 'violating',
      violations: 1,
    });
    expect(BotWallSchema.safeParse(JSON.parse(JSON.stringify(wall))).success).toBe(true);
  });

  it('keeps the version in force when the request came: a new robots.txt counts apart, the old line kept', () => {
    const s = emptySnapshot(T0);
    request(s, createRobotsJudge(OWN), 'GPTBot', '/drafts/a', 0);
    const NEXT = 'User-agent: GPTBot\nDisallow: /\n';
    request(s, createRobotsJudge(NEXT), 'GPTBot', '/drafts/a', 1);
    request(s, createRobotsJudge(NEXT), 'GPTBot', '/docs', 2);
    const rules = Object.values(s.families.GPTBot!.robots!.rules);
    expect(rules.map((r) => [r.version, r.line, r.rule, r.requests])).toEqual([
      [robotsVersion(OWN), 6, 'Disallow: /drafts/', 1],
      [robotsVersion(NEXT), 2, 'Disallow: /', 2],
    ]);
    expect(buildBotWall(content, s, links, T0).robotsTxt.versions).toHaveLength(2);
  });

  it('marks a family that broke no rule compliant, and one never judged not judged', () => {
    const judge = createRobotsJudge(OWN);
    const s = emptySnapshot(T0);
    request(s, judge, 'Googlebot', '/docs', 0);
    request(s, { judge: () => null, versions: () => [] }, 'Bingbot', '/trap/x', 1);
    const wall = buildBotWall(content, s, links, T0);
    expect(wall.botTraffic.families.find((f) => f.family === 'Googlebot')!.robotsTxt.compliance).toBe('compliant');
    expect(wall.botTraffic.families.find((f) => f.family === 'Bingbot')!.robotsTxt).toMatchObject({
      compliance: 'not judged',
      judged: 0,
      rules: [],
    });
  });

  it('keeps at most LEDGER_LIMITS.robotsRules rules and LEDGER_LIMITS.robotsPathsPerRule paths per rule, the rest under (other)', () => {
    const many = `User-agent: *\n${Array.from({ length: 40 }, (_, i) => `Disallow: /r${i}/`).join('\n')}\n`;
    const judge = createRobotsJudge(many);
    const s = emptySnapshot(T0);
    for (let i = 0; i < 40; i++) for (let j = 0; j < 20; j++) request(s, judge, 'GPTBot', `/r${i}/${j}`, 0);
    const p = s.families.GPTBot!.robots!;
    expect(p.violations).toBe(800);
    expect(Object.keys(p.rules)).toHaveLength(LEDGER_LIMITS.robotsRules);
    expect(p.rules['(other)']).toMatchObject({
      rule: '(other rules)',
      requests: 800 - 20 * (LEDGER_LIMITS.robotsRules - 1),
    });
    for (const r of Object.values(p.rules))
      expect(Object.keys(r.paths).length).toBeLessThanOrEqual(LEDGER_LIMITS.robotsPathsPerRule);
    expect(Object.values(p.rules).reduce((n, r) => n + r.requests, 0)).toBe(800);
  });

  it('adds the robots parts of several processes, within the same bounds; a row saved before them has none', () => {
    const judge = createRobotsJudge(OWN);
    const a = emptySnapshot(T0);
    const b = emptySnapshot(T0);
    request(a, judge, 'GPTBot', '/drafts/a', 0);
    request(b, judge, 'GPTBot', '/robots.txt', 0);
    request(b, judge, 'GPTBot', '/drafts/a', 1);
    const old = emptySnapshot(T0);
    count(
      old,
      {
        at: T0,
        method: 'GET',
        path: '/x',
        status: 200,
        host: 'h',
        classification: bot('GPTBot'),
        verification: null,
        bait: false,
        disallowed: false,
      },
      T0,
    );
    expect(old.families.GPTBot!.robots).toBeUndefined();
    const merged = mergeSnapshots(old, [a, b]);
    const p = merged.families.GPTBot!.robots!;
    expect(p).toMatchObject({ judged: 3, violations: 2, afterFetch: 1 });
    expect(Object.values(p.rules)).toMatchObject([{ line: 6, requests: 2, afterFetch: 1, paths: { '/drafts/a': 2 } }]);
    // The inputs are not changed.
    expect(a.families.GPTBot!.robots!.violations).toBe(1);
  });
});

describe('the worst case', () => {
  it('stays within the sizes README "Limits" states when every family breaks more rules on more long paths than kept', () => {
    const long = (prefix: string, i: number) => `${prefix}${i}-${'x'.repeat(15_000)}`;
    // Rules as long as a file may write them, from a host named as long as a log may.
    const file = `User-agent: *\n${Array.from({ length: 10 }, (_, i) => `Disallow: /${i}${'r'.repeat(2000)}`).join('\n')}\n`;
    const host = `${'h'.repeat(5000)}.example`;
    const judge = createRobotsJudge(OWN, new Map([[host, file]]));
    const s = emptySnapshot(T0);
    for (let f = 0; f < 300; f++)
      for (let r = 0; r < 10; r++) {
        for (let p = 0; p < 6; p++)
          // As long as a judged path may be (ROBOTS_LIMITS.pathChars): a longer one is not judged.
          request(s, judge, long(`Family-${f}-`, f), `/${r}${'r'.repeat(2000)}/p${p}-${'x'.repeat(30)}`, 0, host);
        request(s, judge, long(`Family-${f}-`, f), '/robots.txt', 0, host);
      }
    for (const row of Object.values(s.families)) {
      expect(Object.keys(row.robots!.rules).length).toBeLessThanOrEqual(LEDGER_LIMITS.robotsRules);
      for (const r of Object.values(row.robots!.rules)) {
        expect(r.rule.length).toBeLessThanOrEqual(LEDGER_LIMITS.robotsChars);
        expect(Object.keys(r.paths).length).toBeLessThanOrEqual(LEDGER_LIMITS.robotsPathsPerRule);
        for (const p of Object.keys(r.paths)) expect(p.length).toBeLessThanOrEqual(LEDGER_LIMITS.robotsChars);
      }
    }
    const sizes = () => ({
      saved: Buffer.byteLength(JSON.stringify(s)),
      wall: Buffer.byteLength(JSON.stringify(buildBotWall(content, s, links, T0))),
    });
    const full = sizes();
    for (const row of Object.values(s.families)) delete row.robots;
    const without = sizes();
    console.log(
      `robots worst case: saved ${full.saved} bytes (${without.saved} without), /bot-wall.json ${full.wall} bytes (${without.wall} without)`,
    );
    expect(full.saved - without.saved).toBeLessThan(ROBOTS_WORST.saved);
    expect(full.wall - without.wall).toBeLessThan(ROBOTS_WORST.wall);
    expect(full.saved - without.saved).toBeGreaterThan(100 * 1024);
  });
});

describe('live requests', () => {
  it('are judged on their path and query, so a rule naming a query string applies', async () => {
    const t = await createTelemetry({
      funnelStepOf,
      ...telemetryRulesOf(content),
      robots: createRobotsJudge('User-agent: *\nDisallow: /*?sort=\n'),
      resolver: { reverse: async () => [], resolve: async () => [] },
      fetchDirectory: async () => Promise.reject(new Error('no key directories here')),
      store: openMemoryStore().telemetry,
      logger: pino({ level: 'silent' }),
      flushMs: 60_000,
    });
    const GPT =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
    const seen = (path: string, query?: string) =>
      t.observe({
        method: 'GET',
        path,
        ...(query ? { query } : {}),
        host: 'localhost:4321',
        userAgent: GPT,
        status: 200,
        durationMs: 1,
        remoteAddress: '127.0.0.1',
      });
    seen('/list', '?sort=name');
    seen('/list', '?page=2');
    seen('/list');
    const p = t.snapshot().families.GPTBot!.robots!;
    expect(p).toMatchObject({ judged: 3, violations: 1 });
    // The ledger keeps the path without its query.
    expect(Object.values(p.rules)).toMatchObject([{ line: 2, rule: 'Disallow: /*?sort=', paths: { '/list': 1 } }]);
    await t.close();
  });
});

describe('ingested logs are judged per host', () => {
  it("judges a line by its host's robots.txt from ROBOTS_TXT_DIR's files, the service's own hosts by its own, and leaves an unknown host unjudged", async () => {
    const t = await createTelemetry({
      funnelStepOf,
      ...telemetryRulesOf(content),
      robots: createRobotsJudge(
        buildRobots(content, links),
        new Map([['blog.example', 'User-agent: GPTBot\nDisallow: /private/\n']]),
        ['site.example'],
      ),
      resolver: { reverse: async () => [], resolve: async () => [] },
      fetchDirectory: async () => Promise.reject(new Error('no key directories here')),
      store: openMemoryStore().telemetry,
      logger: pino({ level: 'silent' }),
      flushMs: 60_000,
    });
    const GPT =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
    const line = (host: string, path: string): IngestLine => ({
      method: 'GET',
      path,
      host,
      userAgent: GPT,
      status: 200,
    });
    expect(
      t.ingest([
        line('blog.example:443', '/private/a'),
        line('blog.example', '/private/%61'),
        line('site.example', '/trap/1'),
        line('unknown.example', '/private/a'),
        line('blog.example', '/public'),
      ]),
    ).toBe(5);
    const p = t.snapshot().families.GPTBot!.robots!;
    expect(p).toMatchObject({ judged: 4, violations: 3 });
    const rules = Object.values(p.rules).map((r) => [r.host, r.line, r.rule, r.requests]);
    expect(rules).toEqual([
      ['blog.example', 2, 'Disallow: /private/', 2],
      ['site', buildRobots(content, links).split('\n').indexOf('Disallow: /trap/') + 1, 'Disallow: /trap/', 1],
    ]);
    await t.close();
  });
});
