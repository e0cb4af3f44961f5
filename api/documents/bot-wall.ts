import type { Content } from '../content/load.ts';
import { oathDataWithFreshName, shellQuote } from './convert.ts';
import { at, type Links } from './links.ts';
import { PATH } from '../operations/paths.ts';
import { BOT_CLASSES } from '../schemas/bot-families.ts';
import { crawlToReferral } from '../telemetry/referrals/referrals.ts';
import {
  BAIT_BROWSER,
  farmScore,
  LEDGER_LIMITS,
  recentOf,
  type FamilyRow,
  type TelemetrySnapshot,
} from '../telemetry/ledger/ledger.ts';

const top = (map: Record<string, number>, n: number) =>
  Object.entries(map)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n);

const DEFINITION =
  'A request with a bot-like User-Agent seen by the gateway process. User-Agent can be spoofed, so this is not proof of indexing, citation or adoption.';

/** How a family's claims were checked: the method and one outcome per request. */
const verificationOf = (f: FamilyRow) => ({
  method: f.verify,
  verified: f.verified,
  failed: f.failed,
  unverifiable: f.unverifiable,
});

/**
 * A family's requests judged against the robots.txt its group there gives it (RFC 9309): whether it
 * complied, whether it fetched robots.txt, and each Disallow rule it broke with the line as
 * written, the version of the file, and the paths and counts (bounded by LEDGER_LIMITS).
 */
export function robotsTxtOf(f: FamilyRow) {
  const p = f.robots ?? { judged: 0, violations: 0, afterFetch: 0, fetchedAt: {}, rules: {} };
  return {
    compliance:
      p.judged === 0 ? ('not judged' as const) : p.violations === 0 ? ('compliant' as const) : ('violating' as const),
    judged: p.judged,
    violations: p.violations,
    violationsAfterFetch: p.afterFetch,
    fetchedRobotsTxt: f.robotsFetches > 0,
    firstFetch: Object.values(p.fetchedAt).sort()[0] ?? null,
    rules: Object.values(p.rules)
      .sort((a, b) => b.requests - a.requests || a.line - b.line)
      .map((r) => ({
        host: r.host,
        version: r.version,
        line: r.line,
        rule: r.rule,
        agent: r.agent,
        requests: r.requests,
        afterFetch: r.afterFetch,
        paths: top(r.paths, LEDGER_LIMITS.robotsPathsPerRule).map(([path, requests]) => ({ path, requests })),
      })),
  };
}

/** The robots.txt versions the ledger's broken rules name, by host. */
const robotsVersionsOf = (rows: FamilyRow[]) => {
  const seen = new Map<string, { host: string; version: string }>();
  for (const f of rows)
    for (const r of Object.values(f.robots?.rules ?? {}))
      if (r.line > 0) seen.set(`${r.host} ${r.version}`, { host: r.host, version: r.version });
  return [...seen.values()].sort((a, b) => a.host.localeCompare(b.host) || a.version.localeCompare(b.version));
};

/**
 * How a species is shown: its own class, whatever others claiming its name do. Requests that
 * failed its verification are spoofed requests of that name, counted apart (`verification.failed`,
 * and as Cosplay in the class counts), as Cloudflare shows verified and spoofed apart: garbage
 * signed under a genuine agent never turns the genuine family into Cosplay.
 */
export const wallClass = (f: FamilyRow) => f.class;

/** A family's requests by class, request by request: the failed ones as Cosplay, the rest as its class. */
export function requestsByClass(f: FamilyRow): [string, number][] {
  const spoofed = f.class === 'Cosplay' ? 0 : Math.min(f.failed, f.requests);
  return [
    [f.class, f.requests - spoofed],
    ['Cosplay', spoofed],
  ];
}

/** Requests per hour of the last LEDGER_LIMITS.hours hours before `now`, oldest first, hours without requests left out. */
function hourlyOf(f: FamilyRow, now: Date) {
  const since = new Date(now.getTime() - (LEDGER_LIMITS.hours - 1) * 3_600_000).toISOString().slice(0, 13);
  return Object.entries(f.hourly)
    .filter(([hour, n]) => n > 0 && hour.slice(0, 13) >= since)
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([hour, requests]) => ({ hour, requests }));
}

/** Requests per UTC day of the last LEDGER_LIMITS.days days before `now`, oldest first. */
function dailyOf(f: FamilyRow, now: Date) {
  const since = new Date(now.getTime() - (LEDGER_LIMITS.days - 1) * 86_400_000).toISOString().slice(0, 10);
  return Object.entries(f.daily ?? {})
    .filter(([day, n]) => n > 0 && day >= since)
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([day, requests]) => ({ day, requests }));
}

/**
 * What AI sends back, per operator: its crawlers' requests (families of that operator) beside the
 * people its products sent (content/ai-referrers.yaml), with their ratio, since the window started
 * and per hour and day. Operators of the table, and any the ledger holds, even with no visit yet.
 */
export function buildReferrals(c: Content, s: TelemetrySnapshot, now: Date) {
  const crawlers = new Map<
    string,
    { requests: number; hourly: Record<string, number>; daily: Record<string, number> }
  >();
  for (const f of Object.values(s.families)) {
    if (f.operator === null || f.family === BAIT_BROWSER) continue;
    const at = crawlers.get(f.operator) ?? { requests: 0, hourly: {}, daily: {} };
    at.requests += f.requests;
    for (const [k, n] of Object.entries(f.hourly)) at.hourly[k] = (at.hourly[k] ?? 0) + n;
    for (const [k, n] of Object.entries(f.daily ?? {})) at.daily[k] = (at.daily[k] ?? 0) + n;
    crawlers.set(f.operator, at);
  }
  const sent = s.referrals ?? {};
  const names = [...new Set([...c.aiReferrers.operators.map((o) => o.operator), ...Object.keys(sent)])];
  const hourSince = new Date(now.getTime() - (LEDGER_LIMITS.hours - 1) * 3_600_000).toISOString().slice(0, 13);
  const daySince = new Date(now.getTime() - (LEDGER_LIMITS.days - 1) * 86_400_000).toISOString().slice(0, 10);
  const buckets = (
    visits: Record<string, number>,
    crawls: Record<string, number>,
    keep: (k: string) => boolean,
    name: 'hour' | 'day',
  ) =>
    [...new Set([...Object.keys(visits), ...Object.keys(crawls)])]
      .filter(keep)
      .sort()
      .map((k) => ({ [name]: k, visits: visits[k] ?? 0, crawlerRequests: crawls[k] ?? 0 }))
      .filter((b) => b.visits + b.crawlerRequests > 0);
  const operators = names.map((operator) => {
    const r = sent[operator];
    const crawl = crawlers.get(operator) ?? { requests: 0, hourly: {}, daily: {} };
    const visits = r?.visits ?? 0;
    return {
      operator,
      crawlerRequests: crawl.requests,
      referredVisits: visits,
      crawlToReferral: crawlToReferral(crawl.requests, visits),
      sources: top(r?.sources ?? {}, LEDGER_LIMITS.sourcesPerOperator).map(([source, n]) => ({ source, visits: n })),
      firstSeen: r?.firstSeen ?? null,
      lastSeen: r?.lastSeen ?? null,
      hourly: buckets(r?.hourly ?? {}, crawl.hourly, (k) => k.slice(0, 13) >= hourSince, 'hour'),
      daily: buckets(r?.daily ?? {}, crawl.daily, (k) => k >= daySince, 'day'),
    };
  });
  operators.sort(
    (a, b) =>
      b.crawlerRequests + b.referredVisits - (a.crawlerRequests + a.referredVisits) ||
      a.operator.localeCompare(b.operator),
  );
  return {
    definition:
      "A referred visit is a request from a person's browser (no bot User-Agent) whose Referer host, or whose utm_source, names an AI product of content/ai-referrers.yaml; crawler requests are those of the families that operator runs. Only the operator and the matched host are kept, never the Referer.",
    ratio:
      "crawlToReferral = crawler requests / referred visits (Cloudflare Radar's crawl-to-referral ratio); null when no visit was referred",
    sources: c.aiReferrers.sources,
    operators,
  };
}

/** A family's requests against the AI usage preferences and the formats it was served (zeros in a ledger saved before them). */
function usageOf(f: FamilyRow) {
  const u = f.usage;
  return {
    preferenceBroken: u?.preferenceBroken ?? 0,
    formats: { markdown: u?.markdown ?? 0, html: u?.html ?? 0, json: u?.json ?? 0 },
    markdownTokens: u?.markdownTokens ?? 0,
  };
}

/** GET /bot-traffic.json: the persisted observed-bot-request ledger (spec 2.9 botTraffic), families by requests. */
export function buildBotTraffic(c: Content, s: TelemetrySnapshot, now: Date) {
  const families = Object.values(s.families).filter((f) => f.family !== BAIT_BROWSER);
  return {
    version: `${c.site.service}-bot-traffic/v1`,
    generatedAt: now.toISOString(),
    windowStartedAt: s.windowStartedAt,
    observedRequests: s.observedRequests,
    unknownClientRequests: s.presence.unknownClients ?? 0,
    families: families
      .sort((a, b) => b.requests - a.requests || a.family.localeCompare(b.family))
      .map((f) => ({
        family: f.family,
        requests: f.requests,
        firstSeen: f.firstSeen,
        lastSeen: f.lastSeen,
        topPaths: top(f.paths, 10).map(([path, requests]) => ({ path, requests })),
        // A status class with no requests is left out.
        statusCounts: Object.fromEntries(
          ['2xx', '3xx', '4xx', '5xx'].filter((k) => (f.status[k] ?? 0) > 0).map((k) => [k, f.status[k]!]),
        ),
        class: wallClass(f),
        operator: f.operator,
        verification: verificationOf(f),
        robotsTxtFetches: f.robotsFetches,
        disallowedHits: f.violations,
        robotsTxt: robotsTxtOf(f),
        usage: usageOf(f),
        hourly: hourlyOf(f, now),
        daily: dailyOf(f, now),
      })),
    definition: DEFINITION,
    persistence: 'runtime-ledger',
  };
}

function siteLabel(host: string, links: Links): string {
  if (host === new URL(links.site).hostname) return 'site';
  if (host === new URL(links.canon).hostname) return 'canon';
  return host;
}

/** GET /bot-wall.json: the whole bot wall document (spec 2.9). */
export function buildBotWall(c: Content, s: TelemetrySnapshot, links: Links, now: Date) {
  const rows = Object.values(s.families);
  const classCounts = Object.fromEntries(BOT_CLASSES.map((k) => [k, 0]));
  for (const f of rows) for (const [k, n] of requestsByClass(f)) classCounts[k]! += n;
  const bots = rows.filter((f) => f.family !== BAIT_BROWSER);
  const invite = {
    agents: at(links.site, '/api/convert'),
    oath: at(links.site, PATH.takeOath),
    feed: at(links.site, PATH.postMessage),
    fields: at(links.site, '/agents/kit.json'),
    scoreboard: at(links.site, PATH.getScoreboard),
    bot_wall: at(links.site, PATH.botWallPage),
    bot_traffic: at(links.site, PATH.getBotTraffic),
    machine_entry: at(links.site, '/llms.txt'),
  };
  const ageMs = now.getTime() - Date.parse(s.updatedAt);
  return {
    version: `${c.site.versionDate}.${c.site.botWallLabel}`,
    farm: c.site.farm,
    tagline: c.site.tagline,
    generatedAt: now.toISOString(),
    jarsUpdatedAt: s.updatedAt,
    presenceUpdatedAt: s.observedRequests + s.presence.baitHits > 0 ? s.updatedAt : null,
    documentClass: 'telemetry',
    telemetry: {
      observedAt: now.toISOString(),
      provenance: {
        jars: 'gateway runtime ledger',
        presence: 'gateway request log: named bot User-Agents and bait paths',
      },
      window: { kind: 'since_window_start', label: `since ${s.windowStartedAt}` },
      freshness: ageMs < 60_000 ? 'live' : ageMs < 3_600_000 ? 'recent' : 'stale',
      definitionVersion: '1.0.0',
      metric_source: 'gateway',
      counting_method:
        'one count per finished request, classified by claimed User-Agent family; bait paths count whatever the User-Agent',
      window_started_at: s.windowStartedAt,
      observed_through: s.updatedAt,
      generated_at: now.toISOString(),
      schema_version: 'telemetry-regime.v1',
      metric_regime: 'live_farm',
      not_comparable_to: ['persistent_ledger', 'historical_campaign'],
    },
    meters: {
      net_hits: rows.reduce((n, f) => n + f.requests, 0),
      fisher_hits: s.presence.baitHits,
      species_count: rows.length,
      crew_count: rows.filter((f) => f.oaths > 0).length,
      class_counts: classCounts,
      observed_bot_requests: s.observedRequests,
      observed_bot_families: bots.length,
      // Clients no list names and nothing shows to be bots: neither people's nor bots' (counted apart).
      unknown_client_requests: s.presence.unknownClients ?? 0,
    },
    botTraffic: buildBotTraffic(c, s, now),
    robotsTxt: {
      judged_by:
        "RFC 9309: the group naming the crawler's product token (else *), the longest matching rule, Allow on a tie; against the robots.txt in force for the host when the request came",
      versions: robotsVersionsOf(rows),
    },
    usagePreferences: {
      judged_by:
        "IETF aipref drafts (attach-05, vocab-08): the Content-Usage of the request's path in content/crawl-policy.yaml, longest prefix; a family whose kind is ai-training breaks train-ai=n, search and ai-search break search=n",
    },
    referrals: buildReferrals(c, s, now),
    species: rows
      .sort((a, b) => farmScore(b) - farmScore(a) || a.family.localeCompare(b.family))
      .map((f) => ({
        species: f.family,
        intelligence_class: wallClass(f),
        hits: f.requests,
        bait_hits: f.baitHits,
        deep_hits: f.deepHits,
        farm_score: farmScore(f),
        crew_status: f.oaths > 0 ? 'crew' : 'wild',
        last_seen: f.lastSeen,
        domains: Object.fromEntries(Object.entries(f.hosts).map(([h, n]) => [siteLabel(h, links), n])),
        top_paths: top(f.paths, 5).map(([p, n]) => `${p} × ${n}`),
        // The name takes a random suffix: names are unique, and a species has many members.
        invite_curl: `curl -sS -X POST ${shellQuote(invite.oath)} -H 'Content-Type: application/json' ${oathDataWithFreshName({ name: f.family, class: 'crawler', purpose: 'joining from the bot wall' })}`,
        funnel: { presence: f.requests, convert_reads: f.convertReads, oaths: f.oaths, messages: f.messages },
        robots: {
          fetches: f.robotsFetches,
          disallowed_hits: f.violations,
          compliance: robotsTxtOf(f).compliance,
          violations: f.robots?.violations ?? 0,
        },
        // The shape the current page reads; botTraffic.families[].verification has all three outcomes and the method.
        verification: f.verified + f.failed === 0 ? 'not verifiable' : { verified: f.verified, unverified: f.failed },
        hourly: Object.fromEntries(hourlyOf(f, now).map((h) => [h.hour, h.requests])),
      })),
    recent: recentOf(s).reverse(),
    invite,
    definitions: {
      presence: c.convert.definitions.presence,
      catch: c.convert.definitions.catch,
      wall: c.convert.definitions.wall,
      observedBotRequest: c.convert.definitions.observedBotRequest,
      farm_score: 'hits + 2 × deep_hits + 5 × bait_hits + 10 × convert reads + 50 × oaths + 20 × messages',
      deep_hits:
        'requests past the landing documents (/, robots.txt, sitemap.xml, llms.txt, ai.txt, favicon.ico, /api/convert)',
    },
  };
}
export type BotWall = ReturnType<typeof buildBotWall>;
