import { hash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ObservedRequest } from './observed.ts';
import type { TelemetryStore } from '../store/types.ts';
import type { BotFamily } from '../schemas/bot-families.ts';
import type { Content } from '../content/load.ts';
import {
  classificationOf,
  classifyOnConnection,
  createClassifier,
  HUMAN,
  type Classification,
  type Classifier,
} from './classification/classify.ts';
import type { AddressRanges } from './verification/address-ranges.ts';
import type { IngestLine } from './log-formats/types.ts';
import type { BatchAgents } from './log-formats/parse-pool.ts';
import { mayBeVisit, referralRule, rememberReferrals, type ReferralRule } from './referrals/referrals.ts';
import type { Alerts, AlertSource } from './alerts/alerts.ts';
import {
  addRecent,
  count,
  countReferral,
  cut,
  agePool,
  boundPool,
  LEDGER_LIMITS,
  setLedgerRetention,
  emptySnapshot,
  keepClock,
  ledgerTime,
  mergeSnapshots,
  reviveSnapshot,
  settle,
  attribute,
  type FamilyRow,
  type FunnelStep,
  type LedgerEvent,
  type RecentEntry,
  type TelemetrySnapshot,
} from './ledger/ledger.ts';
import type { RobotsJudge, RobotsVerdict } from './robots/robots.ts';
import {
  createPreferenceJudge,
  preferenceOf,
  serialisePreference,
  usageRulesOf,
  type UsageRule,
} from './robots/preferences.ts';
import { createVerifier, rangesOf, type Outcome, type Resolver } from './verification/verify.ts';
import {
  CLOCK_SKEW_S,
  createSignatureVerifier,
  ledgerOutcome,
  type DirectoryFetcher,
} from './web-bot-auth/web-bot-auth.ts';
import { remember } from '../memo.ts';
import { clientKey } from '../net/address.ts';
import { createOperatorTraffic, type OperatorTraffic } from './operator-traffic.ts';

const HEARTBEAT_MS = 5 * 60 * 1000;
/**
 * Distinct requests (path, host, status and judgements) of one pending claim (an address whose
 * lookup runs, a signature being checked) kept until the check answers, each with how many times
 * it came; past them, a claim's other requests are only counted. A log batch's lines from one
 * address all come while its lookup runs.
 */
export const PENDING_EVENTS = 256;

/** A claim whose check has not answered: its requests, and the events of up to PENDING_EVENTS distinct ones. */
interface Pending {
  n: number;
  events: Map<string, LedgerEvent>;
  /** The hashed client whose claim is being checked: the share of the webhook queue its alerts take. */
  client?: string | undefined;
}
/** A claim that could be checked but was not, now (lookups or checks at their bound, its network's under way): counted unverifiable. */
const UNCHECKED = 'unchecked';
/** What is known of a claim as it is counted; null for no bot. */
type Claim = Outcome | typeof UNCHECKED | Pending | null;
/**
 * An ingest group's robots.txt verdict: judged, no rule broken, not a fetch of robots.txt (those go
 * one by one), so the ledger reads nothing else of it.
 */
const JUDGED: RobotsVerdict = { host: '', version: '', broke: null };

/**
 * What content/ gives telemetry: the classifier over the bot table and its human clients, the
 * published address ranges, the families and the bait paths. One reading, for the server, the
 * in-process test app and the benchmarks alike.
 */
export function telemetryRulesOf(
  content: Pick<Content, 'botFamilies' | 'botFamiliesGenerated' | 'botIpRanges' | 'crawlPolicy' | 'aiReferrers'>,
) {
  return {
    classify: createClassifier(content.botFamilies.families, {
      humanClients: content.botFamilies.human_clients,
      generated: content.botFamiliesGenerated.families,
    }),
    ranges: rangesOf(content.botIpRanges),
    families: content.botFamilies.families,
    tableFamilies: new Set(
      [...content.botFamilies.families, ...content.botFamiliesGenerated.families].map((f) =>
        cut(f.family, LEDGER_LIMITS.nameChars),
      ),
    ),
    baitPaths: content.crawlPolicy.disallow,
    ownTraffic: createOperatorTraffic(content.botFamilies.families),
    usage: usageRulesOf(content.crawlPolicy),
    referrals: referralRule(content.aiReferrers),
  };
}

export interface TelemetryOptions {
  classify: Classifier;
  resolver: Resolver;
  /** The curated families (content/bot-families.yaml), for Web Bot Auth's registered agents. */
  families: BotFamily[];
  /** Tells the operator's own probes and CLIs from clients that write their names (telemetryRulesOf). */
  ownTraffic: OperatorTraffic;
  /**
   * The names of every family of the bot table (curated and generated): their rows are never
   * given up. Sorts the rows of a ledger saved before the pool; `families` alone when left out.
   */
  tableFamilies?: ReadonlySet<string>;
  /** Fetches a registered signature agent's key directory. */
  fetchDirectory: DirectoryFetcher;
  /** The service's own authorities (SITE_URL, SITE_ALIASES), each with its scheme: a signature made for another host does not verify. Any when left out. */
  authorities?: ReadonlyMap<string, string>;
  /** Operators' published address ranges by family. */
  ranges?: Map<string, AddressRanges>;
  /** Reverse-DNS lookups in flight at most (RDNS_MAX_IN_FLIGHT by default). */
  maxDnsInFlight?: number;
  store: TelemetryStore;
  /** The funnel step a request's operation declares (api/operations), handed in: telemetry knows no routes. */
  funnelStepOf: (method: string, path: string) => FunnelStep | undefined;
  /** Paths disallowed in robots.txt and linked invisibly: a hit is presence. */
  baitPaths: string[];
  /** Judges a crawler's request against the robots.txt in force for its host (none: not judged). */
  robots?: RobotsJudge;
  /** The operator's AI usage preferences (content/crawl-policy.yaml): a request against them is counted per family. */
  usage?: UsageRule[];
  /** Which AI operator sent a person (content/ai-referrers.yaml); no referral is counted without it. */
  referrals?: ReferralRule;
  logger: Logger;
  /** Alerts to the operator's webhook and the log (a new family, spoofing, robots.txt broken); none when left out. */
  alerts?: Alerts;
  /** Hourly and daily buckets kept (LEDGER_HOURS, LEDGER_DAYS); the defaults when left out. */
  retention?: { hours: number; days: number };
  /** How often the ledger is saved when it changed. */
  flushMs?: number;
  now?: () => Date;
}

/** The path as people read it; a path that cannot be decoded is kept as sent. */
export function readable(path: string): string {
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** A test for "under one of these paths", with the prefixes prepared once. */
export function underAny(prefixes: string[]): (path: string) => boolean {
  const exact = new Set(prefixes);
  const starts = prefixes.map((p) => (p.endsWith('/') ? p : `${p}/`));
  // A loop, not starts.some(): its callback was a closure made per counted request.
  return (path) => {
    if (exact.has(path)) return true;
    for (const p of starts) if (path.startsWith(p)) return true;
    return false;
  };
}

/** The host without its port; the last answer is remembered (requests mostly name one host). */
let lastHost = '';
let lastHostName = '';
export function hostName(host: string): string {
  if (host === lastHost) return lastHostName;
  const colon = host.lastIndexOf(':');
  lastHost = host;
  lastHostName =
    colon > 0 && host.indexOf(']', colon) === -1 && /^\d+$/.test(host.slice(colon + 1)) ? host.slice(0, colon) : host;
  return lastHostName;
}

/** The product tokens a crawler's robots.txt group is chosen by: its family's, else the name it gave. */
export const robotsTokens = (c: Classification): readonly string[] => c.known?.tokens ?? (c.family ? [c.family] : []);

/** A time as a Date, one Date per millisecond (a Date a request was a tenth of counting's cost). */
let clockMs = NaN;
let clock = new Date(0);
function dateAt(ms: number): Date {
  if (ms !== clockMs) {
    clockMs = ms;
    clock = new Date(ms);
  }
  return clock;
}
const wallClock = () => dateAt(Date.now());
/** An ingested line's ISO time as a Date, one Date per distinct time: consecutive lines mostly share it. */
let lineIso = '';
let lineDate = new Date(0);
const dateOfLine = (iso: string) => (iso === lineIso ? lineDate : ((lineIso = iso), (lineDate = new Date(iso))));

/**
 * The gateway's telemetry: one call per finished request, counted in memory and saved in batches
 * (every few seconds when changed, and at close), never a write per request. Client addresses are
 * only used, hashed, to match verification answers; they are never stored.
 */
export type { IngestLine };

export async function createTelemetry(o: TelemetryOptions) {
  // The stores keep the ledger as a document; this module alone knows its shape.
  const store = o.store as TelemetryStore<TelemetrySnapshot>;
  const now = o.now ?? wallClock;
  const classifyOn = classifyOnConnection(o.classify);
  const ownTraffic = o.ownTraffic;
  const isBait = underAny(o.baitPaths);
  // Hashed addresses of recent claims that need a lookup key.
  const ipKeys = new Map<string, string>();
  const ipKeyOf = (address: string) =>
    ipKeys.get(address) ?? remember(ipKeys, 4096, address, hash('sha256', address, 'base64url').slice(0, 16));
  // A client as the pool's evidence and the referral tally count one, hashed: an IPv6 host by its
  // /64 (clientKey), which it can rotate through, as every per-client limit counts it.
  const clientOf = (address: string) => ipKeyOf(clientKey(address));
  // Before the saved ledger is brought to the clock: keepClock drops buckets past the retention.
  if (o.retention) setLedgerRetention(o.retention);
  const saved = await store.load(([first, ...rest]) => mergeSnapshots(first!, rest));
  // Buckets a saved ledger holds ahead of the clock (or past its window) go at once.
  const tableFamilies = o.tableFamilies ?? new Set(o.families.map((f) => cut(f.family, LEDGER_LIMITS.nameChars)));
  const ledger: TelemetrySnapshot = saved
    ? boundPool(keepClock(reviveSnapshot(saved), now()), (family) => tableFamilies.has(family))
    : emptySnapshot(now());
  agePool(ledger, now());
  let dirty = false;
  // Saved at least this often even when nothing changed: on a shared store, a ledger left unsaved
  // for TELEMETRY_STALE_MS is taken for a stopped process's and folded into a new one.
  let lastSaved = Date.now();
  // Claims counted before their verification answer came back, by family and hashed address.
  const waiting = new Map<string, Pending>();
  const verifier = createVerifier({
    resolver: o.resolver,
    ranges: o.ranges,
    maxInFlight: o.maxDnsInFlight,
    onResult: (family, ipKey, outcome) => {
      const key = `${family}\n${ipKey}`;
      const pending = waiting.get(key);
      waiting.delete(key);
      if (pending) settled(family, outcome, pending);
    },
  });
  const signatures = createSignatureVerifier({
    families: o.families,
    fetchDirectory: o.fetchDirectory,
    ...(o.authorities ? { authorities: o.authorities } : {}),
    onFetch: (f) => o.logger.debug({ url: f.url, status: f.status }, 'web bot auth: key directory fetched'),
    // On a shared store, a nonce verifies once in all processes. Looked up at each call: the store's
    // methods may be wrapped (traced) after this.
    // The embedded store keeps no nonces: a process that finds a ledger a process before it saved
    // takes a signature created before its own start, or within the clock skew after, for one that
    // process may have seen (a replay across a restart), and never verifies it.
    ...(store.claimNonce
      ? {
          claimNonce: (signer: string, nonce: string, expiresAt: number) => store.claimNonce!(signer, nonce, expiresAt),
        }
      : saved
        ? { nonceMemorySince: Math.floor(Date.now() / 1000) + CLOCK_SKEW_S + 1 }
        : {}),
    // An ordinary event (counted in /metrics): at debug, without a stack, as a database outage is
    // already one error line. The reason is the driver's (the store's error wraps it).
    onClaimFailure: (error) => {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
      o.logger.debug(
        { reason: cause instanceof Error ? cause.message : String(cause) },
        'web bot auth: nonce not claimed on the shared store; counted unverified',
      );
    },
    onResult: (family, outcome, pending) => {
      settled(family, ledgerOutcome(outcome), pending as Pending);
      // A process whose store keeps no nonces and found no ledger saved holds back nothing: its first
      // verified signature saves the ledger at once, so a process started after it crashed finds one
      // and holds back what it may have seen (not only after 5 s, the next save).
      if (outcome === 'verified' && !nonceGuarded) {
        nonceGuarded = true;
        void flush();
      }
    },
  });
  let nonceGuarded = Boolean(store.claimNonce) || saved !== null;

  /**
   * A claim's check answered: its outcome counted for its requests, and what they say of the family
   * (left out while it ran) added when it verified; a failure towards the spoofing alert, a first
   * proof announcing the family.
   */
  function settled(family: string, outcome: Outcome, pending: Pending): void {
    const announced = announcedBefore(family);
    settle(ledger, family, outcome, pending.n);
    dirty = true;
    const operator = ledger.families[family]?.operator ?? null;
    const source = { client: pending.client };
    if (outcome === 'failed') {
      o.alerts?.failed(family, operator, pending.n, source);
      return;
    }
    if (pending.n > 0 && !announced) announce(family, outcome, source);
    // Not found false, yet unproven (DNS did not answer): nothing said, as for UNCHECKED.
    if (outcome === 'verified')
      for (const e of pending.events.values()) {
        attribute(ledger, family, e);
        judgementAlerts(family, operator, e);
      }
  }
  // Families a claim of which can be proven here: by published ranges, documented host names or a
  // registered signature agent. Such a family is announced by a proven claim only.
  const provable = new Set(
    o.families.filter((f) => verifier.canVerify(f) || (f.signature_agents?.length ?? 0) > 0).map((f) => f.family),
  );

  /**
   * A request signed by a registered agent is that agent's family, whatever its User-Agent says
   * (signed agents often send a browser's), unless the User-Agent names another known family.
   */
  function bySignature(
    r: ObservedRequest,
    classification: Classification,
  ): { classification: Classification; verification: Claim } | null {
    if (!r.signature) return null;
    const family = signatures.familyOf(r.signature.signatureAgent);
    if (!family || (classification.known && classification.known !== family)) return null;
    const pending: Pending = {
      n: 1,
      events: new Map(),
      client: r.remoteAddress ? clientOf(r.remoteAddress) : undefined,
    };
    const outcome = signatures.check(family, { method: r.method, authority: r.host, ...r.signature }, pending);
    const verification = outcome === null ? pending : ledgerOutcome(outcome);
    // Too many checks running: this one was not made.
    return {
      classification: classificationOf(family),
      verification: verification === 'unverifiable' ? UNCHECKED : verification,
    };
  }

  /**
   * The outcome of a claim by address: a robots.txt-only token is spoofed at once; a family that
   * can be checked by address is looked up (pending while DNS answers, settled later; UNCHECKED when
   * no lookup could be made now); a family that signs its requests, unsigned, is UNCHECKED too (it
   * could have been checked); anything else, or a line without an address, is unverifiable.
   */
  function byAddress(classification: Classification, address: string | undefined, n = 1): Claim {
    const known = classification.known;
    if (!classification.bot) return null;
    if (known?.robots_only) return 'failed';
    if (!known || !address || !verifier.canVerify(known))
      return known?.signature_agents?.length ? UNCHECKED : 'unverifiable';
    const ipKey = ipKeyOf(address);
    const outcome = verifier.lookup(known, address, ipKey, n);
    if (outcome === 'unverifiable') return UNCHECKED;
    if (outcome !== null) return outcome;
    const key = `${known.family}\n${ipKey}`;
    let pending = waiting.get(key);
    if (!pending) waiting.set(key, (pending = { n: 0, events: new Map(), client: clientOf(address) }));
    pending.n += n;
    return pending;
  }

  async function flush(): Promise<void> {
    // Pool rows that went quiet leave with the retention (saved with the next change).
    agePool(ledger, now());
    if (!dirty && Date.now() - lastSaved < HEARTBEAT_MS) return;
    dirty = false;
    try {
      await store.save(structuredClone(ledger));
      lastSaved = Date.now();
      o.logger.debug('telemetry: ledger saved');
    } catch (error) {
      dirty = true;
      o.logger.warn({ err: error }, 'telemetry: could not save the ledger; it stays in memory and is retried');
    }
  }
  const timer = setInterval(() => void flush(), o.flushMs ?? 5000);
  timer.unref();

  // One event for every count, its fields set each time: count() reads it and keeps none of it, and
  // a new object a request was ~110 bytes of garbage. Every field always present: one shape.
  const event: LedgerEvent = {
    at: new Date(0),
    method: '',
    path: '',
    status: 0,
    host: '',
    classification: HUMAN,
    verification: null,
    says: false,
    bait: false,
    disallowed: false,
    robots: null,
    step: undefined,
    client: undefined,
    preferenceBroken: false,
    format: undefined,
    markdownTokens: 0,
    n: 1,
    since: undefined,
    atIso: undefined,
    recent: undefined,
  };
  const breaksUsage = createPreferenceJudge(o.usage ?? []);

  /** Counts one request, from the gateway or a CDN log line; false when it is neither a bot nor a bait hit. */
  function countRequest(
    r: {
      method: string;
      path: string;
      query?: string;
      host: string;
      status: number;
      format?: ObservedRequest['format'];
      markdownTokens?: number | undefined;
      step?: FunnelStep | undefined;
    },
    classification: Classification,
    bait: boolean,
    path: string,
    at: Date,
    verification: Claim,
    live: boolean,
    address: string | undefined,
    n = 1,
    since?: string,
    atIso?: string,
    /** The verdict an ingest worker found with the same robots.txt files (a group's: judged, nothing broken). */
    judged?: RobotsVerdict | null,
  ): boolean {
    // A table family is counted under its own name: a client's spelling of it (`COLLECTD`) or words
    // written after its token (`collectd Stuff`, which the classifier shows) would each make a row
    // that the table does not bound.
    if (classification.known !== null && classification.family !== classification.known.family)
      classification = { ...classification, family: classification.known.family };
    // The ledger keeps the server's clock: `at` counts only within ledgerRange(now), never ahead of now.
    // A tool call's step over MCP or A2A, else the HTTP operation's: counted as the claim says (count()).
    const step = r.step ?? o.funnelStepOf(r.method, r.path);
    const host = hostName(r.host);
    // Judged on the path and query as sent (RFC 9309 compares percent-encoded forms), by the crawler's
    // own tokens; an ingested line's query is not in its record, so only its path is judged.
    const robots =
      judged !== undefined
        ? judged
        : o.robots && classification.bot
          ? o.robots.judge(live ? null : host, r.query ? r.path + r.query : r.path, robotsTokens(classification))
          : null;
    const name =
      o.alerts && classification.family !== null ? cut(classification.family, LEDGER_LIMITS.nameChars) : null;
    // A spoofer's claim takes no family's announcement (announcedBefore).
    const announced = name === null || announcedBefore(name);
    event.at = at;
    event.method = r.method;
    event.path = path;
    event.status = r.status;
    event.host = host;
    event.classification = classification;
    const outcome =
      verification === UNCHECKED ? 'unverifiable' : typeof verification === 'object' ? null : verification;
    event.verification = outcome;
    // What the request says of its family is the family's when its claim is proven, or when nothing
    // could check it; not when it failed, is being checked, or could not be checked now (a
    // spoofer's claims while its network's lookup runs): those must not take the crawler's path
    // slots or make it break robots.txt.
    event.says = verification === 'verified' || verification === 'unverifiable';
    event.bait = bait;
    event.disallowed = bait;
    event.robots = robots;
    event.step = step;
    // Only a name the bot table does not know needs its client, as evidence (hashed, never stored);
    // a table family's is hashed only when one of its alerts is raised (alertSource).
    event.client = classification.known === null && address ? clientOf(address) : undefined;
    event.preferenceBroken = classification.bot && breaksUsage(classification.known?.kind, path);
    event.format = r.format;
    event.markdownTokens = r.markdownTokens ?? 0;
    event.n = n;
    event.since = since;
    event.atIso = atIso;
    // A live request's time is the server's clock (the gateway read it when the answer was finished).
    const counted = count(ledger, event, live ? at : now());
    dirty ||= counted;
    if (!counted || !classification.bot) return counted;
    // What a claim being checked says of its family waits for the check (count() left it out).
    if (typeof verification === 'object' && verification !== null) hold(verification, event, address);
    const row = name === null ? undefined : ledger.families[name];
    if (!o.alerts || !row) return counted;
    alertOn(row, announced, outcome, event, address);
    // The rest of a group's failures, one by one: the spoofing alert tells how many when it is raised.
    if (outcome === 'failed' && n > 1) {
      const source = alertSource(event, address);
      for (let i = 1; i < n; i++) o.alerts.failed(row.family, row.operator, 1, source);
    }
    if (event.says) judgementAlerts(row.family, row.operator, event, address);
    return counted;
  }

  /**
   * The hashed client of a counted request: the event's own (a name the table does not know), else
   * its address hashed now (a table family's, hashed only where an alert or a held claim needs it).
   */
  const clientOfEvent = (e: LedgerEvent, address: string | undefined) =>
    e.client ?? (address === undefined ? undefined : clientOf(address));

  /** Keeps a copy of a pending claim's request event (with its client), added to an equal one's count when it came before. */
  function hold(pending: Pending, e: LedgerEvent, address: string | undefined): void {
    const key = `${e.path}\n${e.host}\n${e.status}\n${e.step}\n${e.format}\n${e.bait}\n${e.preferenceBroken}\n${JSON.stringify(e.robots)}`;
    const held = pending.events.get(key);
    if (held) held.n = (held.n ?? 1) + (e.n ?? 1);
    else if (pending.events.size < PENDING_EVENTS)
      pending.events.set(key, {
        ...e,
        at: new Date(e.at.getTime()),
        recent: undefined,
        client: clientOfEvent(e, address),
      });
  }

  /**
   * Whether a family was announced: it has a verified claim, or, when no claim of it can be proven
   * here, one that did not fail. A spoofer's claims of a provable family are failed, or unverifiable
   * while its network's lookup is under way: none of them is the crawler's arrival.
   */
  function announcedBefore(family: string): boolean {
    const row = ledger.families[family];
    return row !== undefined && (row.verified > 0 || (!provable.has(family) && row.unverifiable > 0));
  }

  /**
   * A new family's alert, raised on its first verified claim, or, for a family no claim of which can
   * be proven here, its first claim that did not fail (at once, or when a lookup or a signature
   * check answers): a spoofed claim of a crawler that has not come yet takes no announcement from
   * the crawler, and a family whose every claim fails has its spoofing alert. Generic HTTP tools
   * (curl, Wget: content/bot-families.yaml's "(tool)") are what operators probe with: counted, never
   * news. A family folded into "(other families)" has no row and raises nothing. A verified one is
   * queued for the webhook ahead of alerts anyone could raise by writing a name.
   */
  function announce(family: string, outcome: Outcome, source?: AlertSource): void {
    const row = ledger.families[family];
    if (row && row.operator !== '(tool)' && (outcome === 'verified' || !provable.has(family)))
      o.alerts?.newFamily(row.family, row.operator, row.class, outcome === 'verified', source);
  }

  /**
   * Where a counted request's family name came from, as alerts.ts keeps its alerts: the table family
   * it claims (a name the table knows, however the client spelled it), and the client it came from
   * (its share of the webhook queue). A table family's name is cut once: a flood of spoofed claims
   * builds no string per request. `address`: the counted request's (a held event carries its client).
   */
  const knownNames = new WeakMap<BotFamily, string>();
  function alertSource(e: LedgerEvent, address?: string): AlertSource {
    const known = e.classification.known;
    if (!known) return { client: e.client };
    let name = knownNames.get(known);
    if (name === undefined) knownNames.set(known, (name = cut(known.family, LEDGER_LIMITS.nameChars)));
    return { known: name, client: clientOfEvent(e, address) };
  }

  /** The announcement or spoofing alert a counted claim may raise (each bounded and once per window in alerts.ts). */
  function alertOn(
    row: FamilyRow,
    announced: boolean,
    outcome: Outcome | null,
    e: LedgerEvent,
    address: string | undefined,
  ): void {
    // Almost every counted request is an announced family's, verified or pending: nothing to raise.
    if (announced && outcome !== 'failed') return;
    if (!announced && (outcome === 'verified' || outcome === 'unverifiable'))
      announce(row.family, outcome, alertSource(e, address));
    if (outcome === 'failed') o.alerts!.failed(row.family, row.operator, 1, alertSource(e, address));
  }

  /**
   * The robots.txt and usage alerts of a request whose claim is not known false (at once, or when its
   * check answers): a path robots.txt disallows for this crawler (its own group's rule) or a bait
   * path; a path whose AI usage preference its purpose goes against.
   */
  function judgementAlerts(family: string, operator: string | null, e: LedgerEvent, address?: string): void {
    if (!o.alerts) return;
    if (e.disallowed || e.robots?.broke != null) o.alerts.robots(family, operator, e.path, alertSource(e, address));
    if (e.preferenceBroken)
      o.alerts.preference(
        family,
        operator,
        e.path,
        serialisePreference(preferenceOf(e.path, o.usage!)),
        alertSource(e, address),
      );
  }

  const referralOf = o.referrals && rememberReferrals(o.referrals);

  /**
   * Counts a person an AI product sent: a request that is no bot (bots' Referers say nothing of
   * people) whose Referer or utm_source the table names, its address's share of the hour allowing
   * (LEDGER_LIMITS.referralsPerClientHour). Only the operator and the table's host are kept, never
   * the Referer itself.
   */
  function countReferred(
    referer: string | undefined,
    utmSource: string | undefined,
    at: Date,
    address: string | undefined,
  ): boolean {
    if (!referralOf || (!referer && !utmSource)) return false;
    const found = referralOf(referer, utmSource);
    if (!found) return false;
    const client = address === undefined ? undefined : clientOf(address);
    const counted = countReferral(ledger, found.operator, found.source, at, now(), 1, undefined, undefined, client);
    dirty ||= counted;
    return counted;
  }

  // Ingested User-Agents' classifications: a log's distinct strings come back batch after batch,
  // and a Map lookup is a fraction of the classifier's LRU.
  const logged = new Map<string, Classification>();
  const classifyLogged = (ua: string): Classification => logged.get(ua) ?? remember(logged, 8192, ua, o.classify(ua));

  const telemetry = {
    /**
     * Counts requests a CDN or proxy served; a line's client address is verified like a live
     * request's, never stored. A line dated outside the ledger's range at the server's clock
     * (ledgerRange) changes nothing and is counted as out of range. With `agents` (a parse
     * worker's), each distinct User-Agent of the batch is classified once.
     */
    ingestBatch(lines: IngestLine[], agents?: BatchAgents): { counted: number; outOfRange: number } {
      let counted = 0;
      let outOfRange = 0;
      // A batch's User-Agents classified on first use: most are people's on quiet lines, never read here.
      const classes = new Array<Classification | undefined>(agents?.agents.length ?? 0);
      const classOf = (agent: number): Classification => (classes[agent] ??= classifyLogged(agents!.agents[agent]!));
      // Lines a worker found to count nothing (people not sent by an AI product): only their dates are read.
      agents?.quiet.times.forEach((time, i) => {
        if (ledgerTime(dateOfLine(time), now()) === null) outOfRange += agents.quiet.counts[i]!;
      });
      /** One line, as a live request would be counted; whether it counted. */
      const countLine = (l: IngestLine, named: Classification): boolean => {
        const path = readable(l.path);
        const bait = isBait(path);
        // The operator's own traffic (probes, our CLIs) is named by the classifier and never counted.
        const classification = ownTraffic(named, l.clientAddress, path);
        if (classification === null) return false;
        // A person an AI product sent is counted as a referral (once a line, with a bait hit or alone).
        const referred =
          mayBeVisit(classification, l.method, l.status) &&
          countReferred(l.referer, l.utmSource, l.time ? dateOfLine(l.time) : now(), l.clientAddress);
        if (!classification.bot && !bait && !classification.unknown) return referred;
        return (
          countRequest(
            l,
            classification,
            bait,
            path,
            l.time ? dateOfLine(l.time) : now(),
            byAddress(classification, l.clientAddress),
            false,
            l.clientAddress,
          ) || referred
        );
      };
      if (!agents) {
        for (const l of lines) {
          if (l.time && ledgerTime(dateOfLine(l.time), now()) === null) {
            outOfRange++;
            continue;
          }
          if (countLine(l, o.classify(l.userAgent))) counted++;
        }
        return { counted, outOfRange };
      }
      // A worker's groups and lone lines, in the order of their first lines. The recent requests are
      // placed at the end, from the batch's latest lines, as counting each line would have left them.
      const entries: (RecentEntry | undefined)[] = [];
      const scratch: RecentEntry[] = [];
      let recentCounted = 0;
      event.recent = scratch;
      try {
        agents.items.forEach((item, k) => {
          if (typeof item === 'number') {
            const l = lines[item]!;
            if (l.time && ledgerTime(dateOfLine(l.time), now()) === null) {
              outOfRange++;
              return;
            }
            if (countLine(l, classOf(agents.agentOf[item]!))) counted++;
            if (scratch.length) ((entries[k] = scratch.pop()!), recentCounted++);
            return;
          }
          const at = new Date(item.atMs);
          // A group's lines share an hour dated hours before the clock: within the range or out, all.
          if (ledgerTime(at, now()) === null) {
            outOfRange += item.n;
            return;
          }
          const referred = item.referral
            ? countReferral(
                ledger,
                item.referral.operator,
                item.referral.source,
                at,
                now(),
                item.n,
                item.since,
                item.at,
              )
            : false;
          dirty ||= referred;
          const classification = classOf(item.agent);
          const path = readable(item.path);
          const request =
            item.request &&
            countRequest(
              item,
              classification,
              isBait(path),
              path,
              at,
              item.verification === 'lookup' ? byAddress(classification, item.address, item.n) : item.verification,
              false,
              undefined,
              item.n,
              item.since,
              item.at,
              o.robots && classification.bot ? (item.judged ? JUDGED : null) : undefined,
            );
          if (request || referred) counted += item.n;
          if (scratch.length) ((entries[k] = scratch.pop()!), (recentCounted += item.n));
        });
      } finally {
        event.recent = undefined;
      }
      const last: RecentEntry[] = [];
      for (const [k, time] of agents.tail) {
        const entry = entries[k];
        if (entry) last.push(typeof agents.items[k] === 'number' ? entry : { ...entry, at: time });
      }
      addRecent(ledger, recentCounted, last);
      return { counted, outOfRange };
    },
    /** The requests ingestBatch counted, alone. */
    ingest(lines: IngestLine[]): number {
      return telemetry.ingestBatch(lines).counted;
    },
    observe(r: ObservedRequest): void {
      const claimed = classifyOn(r.userAgent, r.connection);
      const signed = bySignature(r, claimed);
      const path = readable(r.path);
      const classification = ownTraffic(signed?.classification ?? claimed, r.remoteAddress, path);
      if (classification === null) return;
      const bait = isBait(path);
      const at = r.time === undefined ? now() : dateAt(r.time);
      if (r.referral && mayBeVisit(classification, r.method, r.status))
        countReferred(r.referral.referer, r.referral.utmSource, at, r.remoteAddress);
      if (!classification.bot && !bait && !classification.unknown) return;
      countRequest(
        r,
        classification,
        bait,
        path,
        at,
        signed ? signed.verification : byAddress(classification, r.remoteAddress),
        true,
        r.remoteAddress,
      );
    },
    /** Reverse-DNS lookups started and in flight (tests and benchmarks read them). */
    dnsLookups: () => ({ started: verifier.lookups(), inFlight: verifier.inFlight() }),
    /** Reverse-DNS verification since start: lookups, DNS queries, requests not looked up by why (metrics). */
    dnsStats: () => verifier.stats(),
    /** Web Bot Auth: key directory fetches, replayed signatures, members naming an unregistered directory, failed nonce claims (metrics). */
    webBotAuth: () => signatures.stats(),
    /** Reverse-DNS lookups in flight, for metrics. */
    verificationsInFlight: (): number => verifier.inFlight(),
    /** The live ledger of this process (read-only use). */
    snapshot: (): TelemetrySnapshot => ledger,
    /** This process's live ledger added to what the other processes last saved. */
    async combined(): Promise<TelemetrySnapshot> {
      return mergeSnapshots(ledger, await store.others());
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
  return telemetry;
}
export type Telemetry = Awaited<ReturnType<typeof createTelemetry>>;
