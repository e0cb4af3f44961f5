import type { VerifyMethod } from '../../schemas/bot-families.ts';
import type { Classification } from '../classification/classify.ts';
import type { Outcome } from '../verification/verify.ts';
import type { RobotsVerdict } from '../robots/robots.ts';

/** Everything counted for one family (the family a User-Agent claims). */
export interface FamilyRow {
  family: string;
  class: string;
  /** Who runs it, when the family is in our table. */
  operator: string | null;
  /** How its claims can be checked. */
  verify: VerifyMethod;
  requests: number;
  firstSeen: string;
  lastSeen: string;
  /** Requests per path (at most LEDGER_LIMITS.pathsPerFamily, each cut to LEDGER_LIMITS.pathChars; the rest under "(other)"). */
  paths: Record<string, number>;
  status: Record<string, number>;
  hosts: Record<string, number>;
  /** Requests per hour, keyed by the hour's ISO start (the last LEDGER_LIMITS.hours hours). */
  hourly: Record<string, number>;
  /** Requests per UTC day, keyed YYYY-MM-DD (the last DAYS days). */
  daily: Record<string, number>;
  baitHits: number;
  deepHits: number;
  robotsFetches: number;
  violations: number;
  convertReads: number;
  oaths: number;
  messages: number;
  /** Verification outcomes, one per request. */
  verified: number;
  failed: number;
  unverifiable: number;
  /** Requests judged against robots.txt (absent in ledgers saved before it; robotsPart() fills it in). */
  robots?: RobotsPart;
  /** A name the bot table does not know: its row is the pool's, held while its evidence ranks (absent for the table's families). */
  pooled?: true;
  /** AI usage preferences judged and formats served (absent in ledgers saved before them; usagePart() fills it in). */
  usage?: UsagePart;
}

/** A name of the pool as the heavy-hitters sketch counts it (Space-Saving): units of evidence, one per client and hour. */
export interface PoolCount {
  /** Units counted, an overestimate by at most `error` (what the entry it replaced had). */
  count: number;
  error: number;
  lastSeen: string;
}

/** What a family took: formats, Markdown tokens, and requests against the operator's AI usage preferences. */
export interface UsagePart {
  /** Requests for paths whose Content-Usage the family's purpose goes against (a training crawler on `train-ai=n`). */
  preferenceBroken: number;
  /** Answers by the format served. */
  markdown: number;
  html: number;
  json: number;
  /** The x-markdown-tokens estimate of every Markdown answer, summed. */
  markdownTokens: number;
}

/** The formats the ledger tells apart. */
export type ServedFormat = 'markdown' | 'html' | 'json';

/** One Disallow rule a family broke: the line as written, in the version of the file in force. */
export interface RobotsRuleCount {
  /** The host whose robots.txt it is (`site` for the service's own). */
  host: string;
  version: string;
  line: number;
  /** `Disallow: /path`, as written. */
  rule: string;
  /** The group's user-agent (the crawler's token, or `*`). */
  agent: string;
  requests: number;
  /** Of them, sent after the family had fetched that host's robots.txt. */
  afterFetch: number;
  /** Requests per path (at most LEDGER_LIMITS.robotsPathsPerRule; the rest under "(other)"). */
  paths: Record<string, number>;
}

/** A family's requests judged against the robots.txt in force for the host they went to. */
export interface RobotsPart {
  judged: number;
  violations: number;
  /** Violations sent after the family had fetched that host's robots.txt. */
  afterFetch: number;
  /** First /robots.txt fetch per host (at most LEDGER_LIMITS.hostsPerFamily hosts). */
  fetchedAt: Record<string, string>;
  /** Broken rules, keyed `host version line` (at most LEDGER_LIMITS.robotsRules; the rest under "(other)"). */
  rules: Record<string, RobotsRuleCount>;
}

/** The persisted telemetry ledger. */
export interface TelemetrySnapshot {
  /** 2 since daily buckets and three verification outcomes; a saved 1 is revived on load. */
  version: 1 | 2;
  windowStartedAt: string;
  updatedAt: string;
  observedRequests: number;
  /** unknownClients: requests from clients no list names and nothing shows to be bots, counted apart (absent in ledgers saved before it). */
  presence: { namedBotHits: number; baitHits: number; unknownClients?: number };
  families: Record<string, FamilyRow>;
  /**
   * The evidence for names the bot table does not know (at most LEDGER_LIMITS.poolCandidates);
   * absent in ledgers saved before it, whose rows poolRows() sorts when they are loaded.
   */
  pool?: Record<string, PoolCount>;
  /** People sent by AI products, by operator (absent in ledgers saved before it). */
  referrals?: Record<string, ReferralRow>;
  /** The last requests counted, oldest first: up to twice LEDGER_LIMITS.recent held, recentOf(s) the last of them. */
  recent: { at: string; family: string; class: string; path: string; status: number }[];
}

/** The visits one AI operator's products sent (what AI sends back): never a URL, only the table's host. */
export interface ReferralRow {
  operator: string;
  visits: number;
  /** Visits per matched table entry (`chatgpt.com`, `utm_source=chatgpt.com`), at most LEDGER_LIMITS.sourcesPerOperator. */
  sources: Record<string, number>;
  hourly: Record<string, number>;
  daily: Record<string, number>;
  firstSeen: string;
  lastSeen: string;
}

/** One request as the ledger counts it. */
export interface LedgerEvent {
  at: Date;
  method: string;
  path: string;
  status: number;
  host: string;
  classification: Classification;
  /** The verification outcome; null while a lookup is under way (settled later). */
  verification: Outcome | null;
  /**
   * Whether what a bot's request says of its family (paths, hosts, traps, robots.txt, usage, funnel)
   * is the family's: telemetry's answer (a proven claim, or one nothing could check); left out,
   * a claim that was not found false and is not being checked.
   */
  says?: boolean;
  bait: boolean;
  disallowed: boolean;
  /** The robots.txt verdict on the request; absent or null when no robots.txt is known for its host. */
  robots?: RobotsVerdict | null;
  /** The funnel step the request's operation declares, if any (counted when it succeeded). */
  step?: FunnelStep;
  /** The client's hashed address, for a name the bot table does not know (its evidence is counted per client). */
  client?: string | undefined;
  /** Whether the family's purpose goes against the AI usage preference of the path. */
  preferenceBroken?: boolean;
  /** The format answered, and the Markdown's token estimate (x-markdown-tokens). */
  format?: ServedFormat | undefined;
  markdownTokens?: number;
  /**
   * Requests this event stands for (1 when left out): an ingest worker's group of log lines that
   * the ledger counts alike, `at` the latest of them and `since` the earliest (ISO), `atIso` `at`'s ISO form.
   */
  n?: number;
  since?: string | undefined;
  atIso?: string | undefined;
  /** Where the request's entry among the recent ones goes instead of the ledger (an ingested batch places its own). */
  recent?: RecentEntry[] | undefined;
}

/** One of the ledger's recent requests. */
export type RecentEntry = TelemetrySnapshot['recent'][number];

/** Hourly and daily buckets kept: LEDGER_HOURS and LEDGER_DAYS, set once at start (setLedgerRetention). */
export const RETENTION_BOUNDS = {
  hours: { min: 24, max: 336, default: 48 },
  days: { min: 7, max: 400, default: 8 },
} as const;
export const DEFAULT_RETENTION = {
  hours: RETENTION_BOUNDS.hours.default,
  days: RETENTION_BOUNDS.days.default,
} as const;
const retention: { hours: number; days: number } = { ...DEFAULT_RETENTION };

/**
 * Sets how many hourly and daily buckets every family and referral row keeps (the operator's
 * LEDGER_HOURS and LEDGER_DAYS, validated by api/config.ts); throws outside RETENTION_BOUNDS.
 * Process-wide, like the other bounds: one ledger a process.
 */
export function setLedgerRetention(r: { hours: number; days: number }): void {
  const within = (n: number, b: { min: number; max: number }) => Number.isInteger(n) && n >= b.min && n <= b.max;
  if (!within(r.hours, RETENTION_BOUNDS.hours) || !within(r.days, RETENTION_BOUNDS.days))
    throw new RangeError(`retention out of bounds: ${JSON.stringify(r)}`);
  retention.hours = r.hours;
  retention.days = r.days;
}

/** The ledger's bounds: whatever clients send, it never holds more (README "Bot telemetry"). */
export const LEDGER_LIMITS = {
  /**
   * Rows of names the bot table does not know (the pool), given by evidence (poolCount), not by
   * arrival; a name without a row shares OTHER_FAMILIES. The table's own families always have a
   * row each (bounded by the table: about 1,900).
   */
  poolRows: 64,
  /** Names the pool's Space-Saving sketch counts at most. */
  poolCandidates: 256,
  /** Units of evidence one client gives pool names in an hour (one a name): its share is capped. */
  clientUnitsPerHour: 4,
  /** Clients an hour whose units are remembered; past them, the one remembered longest gives its place to a new one. */
  poolClients: 8192,
  /** Paths per family; past them, new paths share "(other)". */
  pathsPerFamily: 16,
  hostsPerFamily: 5,
  /** Characters kept of a path, a host and a family name. */
  pathChars: 128,
  hostChars: 64,
  nameChars: 64,
  /** Hourly buckets kept (LEDGER_HOURS). */
  get hours(): number {
    return retention.hours;
  },
  /** Daily buckets kept (LEDGER_DAYS). */
  get days(): number {
    return retention.days;
  },
  recent: 20,
  /** Broken robots.txt rules kept per family, paths per rule, and characters kept of those paths and of a rule's line. */
  robotsRules: 4,
  robotsPathsPerRule: 4,
  robotsChars: 96,
  /** Referral rows (operators of content/ai-referrers.yaml; past them, "(other operators)"). */
  referralOperators: 32,
  sourcesPerOperator: 8,
  /** Visits one client (address) is counted as sent by one AI operator in an hour: a person clicks a few links, a script thousands. */
  referralsPerClientHour: 10,
  /** Clients an hour whose referrals are tallied; past them, the hour's new clients are counted without a cap. */
  referralClients: 8192,
  /**
   * Hours whose per-client tallies (pool units, referral shares) are kept at once, the latest seen:
   * a log's batches are counted a little out of time order (the CLI keeps six in flight) and its
   * lines cross an hour's end out of order, and each finds its hour's tally. An hour older than
   * these starts a tally afresh.
   */
  tallyHours: 4,
} as const;
const L = LEDGER_LIMITS;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** How far ahead of the server's clock a record may be dated: a CDN's clock and ours may differ a little. */
export const LEDGER_SKEW_MS = 5 * 60_000;

/**
 * The times the ledger takes at `now`, in ms: from the start of its oldest daily bucket (UTC
 * midnight LEDGER_LIMITS.days - 1 days before today: what it keeps), or of its oldest hourly one
 * when LEDGER_HOURS reaches further back, to LEDGER_SKEW_MS ahead.
 * A record dated before would land in no bucket the wall shows; one dated after would outrank
 * the live buckets, which are kept newest first, and push them out.
 */
export function ledgerRange(now: Date): { from: number; to: number } {
  const ms = now.getTime();
  return { from: rangeFrom(ms), to: ms + LEDGER_SKEW_MS };
}
// The retention read directly: LEDGER_LIMITS' getters are a call each on every counted request.
const rangeFrom = (ms: number) =>
  Math.min(
    Math.floor(ms / DAY) * DAY - (retention.days - 1) * DAY,
    Math.floor(ms / HOUR) * HOUR - (retention.hours - 1) * HOUR,
  );

/** A record's time as the ledger counts it at `now`: null outside ledgerRange; one ahead of `now` counts as `now`. */
export function ledgerTime(at: Date, now: Date): Date | null {
  const t = at.getTime();
  const ms = now.getTime();
  // NaN (an invalid date) fails both comparisons.
  if (!(t >= rangeFrom(ms) && t <= ms + LEDGER_SKEW_MS)) return null;
  return t > ms ? now : at;
}

const hourKey = (ms: number) => `${new Date(ms).toISOString().slice(0, 13)}:00:00Z`;
const dayKey = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The oldest and newest bucket keys the ledger keeps at `now`. */
const hourSpan = (now: number) => ({
  oldest: hourKey(Math.floor(now / HOUR) * HOUR - (L.hours - 1) * HOUR),
  newest: hourKey(now),
});
const daySpan = (now: number) => ({
  oldest: dayKey(Math.floor(now / DAY) * DAY - (L.days - 1) * DAY),
  newest: dayKey(now),
});

export const OTHER_FAMILIES = '(other families)';
// Browsers caught in a bait path: a presence with no claim of its own.
export const BAIT_BROWSER = 'browser in a bait path';

export const emptySnapshot = (now: Date): TelemetrySnapshot => ({
  version: 2,
  windowStartedAt: now.toISOString(),
  updatedAt: now.toISOString(),
  observedRequests: 0,
  presence: { namedBotHits: 0, baitHits: 0 },
  families: {},
  pool: {},
  recent: [],
});

// Object.prototype's own names. As a key of the ledger's maps (plain objects, saved as JSON),
// `__proto__` would set the map's prototype and `constructor` would read a function, not a count.
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * A client-sent string as a key of the ledger's maps: cut to `max` characters (marked with an
 * ellipsis), and one of Object.prototype's names with a leading apostrophe (`'constructor`).
 */
export const cut = (text: string, max: number) => {
  const key = text.length > max ? `${text.slice(0, max - 1)}…` : text;
  return PROTOTYPE_NAMES.has(key) ? `'${key}` : key;
};

/** Adds to a counter map; returns true when the key is new. Past `cap` keys, new ones fold into "(other)". */
const bump = (map: Record<string, number>, key: string, by = 1, cap = Infinity): boolean => {
  const n = map[key];
  if (n !== undefined) {
    map[key] = n + by;
    return false;
  }
  if (cap !== Infinity && Object.keys(map).length >= cap - 1) key = '(other)';
  map[key] = (map[key] ?? 0) + by;
  return true;
};

/**
 * A counter map past `cap` keys (a row that took pool rows' paths unbounded, as saved before),
 * brought back to it: its largest counts kept, the rest added into "(other)".
 */
function capMap(map: Record<string, number>, cap: number): void {
  const keys = Object.keys(map);
  if (keys.length <= cap) return;
  const kept = new Set(
    keys
      .filter((k) => k !== '(other)')
      .sort((a, b) => map[b]! - map[a]!)
      .slice(0, cap - 1),
  );
  let other = map['(other)'] ?? 0;
  for (const k of keys)
    if (!kept.has(k) && k !== '(other)') {
      other += map[k]!;
      delete map[k];
    }
  map['(other)'] = other;
}

/**
 * Drops the buckets of a time-keyed map outside [oldest, newest] (the keys at the server's clock:
 * ISO keys of four-digit years sort by time), then, should more than `keep` be left (a clock set
 * back), the oldest of them.
 */
function prune(map: Record<string, number>, span: { oldest: string; newest: string }, keep: number): void {
  for (const key of Object.keys(map)) if (key < span.oldest || key > span.newest) delete map[key];
  const keys = Object.keys(map);
  if (keys.length <= keep) return;
  keys.sort();
  for (const old of keys.slice(0, keys.length - keep)) delete map[old];
}

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];
const statusClass = (status: number) => STATUS_CLASSES[Math.floor(status / 100)] ?? `${Math.floor(status / 100)}xx`;
/** The documents a crawler lands on; anything else it reads is a deep hit. */
export const SURFACE_PATHS = new Set([
  '/',
  '/index.html',
  '/robots.txt',
  '/sitemap.xml',
  '/llms.txt',
  '/ai.txt',
  '/.well-known/ai.txt',
  '/favicon.ico',
  '/api/convert',
]);
export const isDeep = (path: string) => !SURFACE_PATHS.has(path);

const newRow = (family: string, c: Classification, at: string): FamilyRow => ({
  family,
  class: family === OTHER_FAMILIES ? 'Bot' : (c.class ?? 'Cosplay'),
  operator: family === OTHER_FAMILIES ? null : (c.known?.operator ?? null),
  verify: family === OTHER_FAMILIES ? 'none' : c.verify,
  requests: 0,
  firstSeen: at,
  lastSeen: at,
  paths: {},
  status: {},
  hosts: {},
  hourly: {},
  daily: {},
  baitHits: 0,
  deepHits: 0,
  robotsFetches: 0,
  violations: 0,
  convertReads: 0,
  oaths: 0,
  messages: 0,
  verified: 0,
  failed: 0,
  unverifiable: 0,
});

/**
 * A family's row. A family of the bot table (`known`) gets its own on first sight, always; a name
 * the table does not know gets one only when its evidence earns it (admit()), else it shares
 * OTHER_FAMILIES. `client` is the hashed address the request came from, when there is one.
 */
function rowOf(s: TelemetrySnapshot, c: Classification, at: string, hour: string, client?: string): FamilyRow {
  const name = c.family === null ? BAIT_BROWSER : cut(c.family, L.nameChars);
  const row = s.families[name];
  if (c.family === null || c.known !== null) {
    if (row?.pooled) {
      // A name the table gained since, or one a client wrote before names were read as claims: the
      // row keeps its counts (requests that named it) and takes the table's class, operator and method.
      const { class: klass, operator, verify } = newRow(name, c, at);
      Object.assign(row, { class: klass, operator, verify });
      delete row.pooled;
      pooledNames.delete(s);
    }
    return row ?? (s.families[name] = newRow(name, c, at));
  }
  if (!evidence(s, name, at, hour, client)) return row ?? otherRow(s, at);
  return row ?? admit(s, c, name, at) ?? otherRow(s, at);
}

const otherRow = (s: TelemetrySnapshot, at: string) =>
  (s.families[OTHER_FAMILIES] ??= newRow(
    OTHER_FAMILIES,
    { bot: true, family: OTHER_FAMILIES, class: 'Bot', known: null, verify: 'none' },
    at,
  ));

/**
 * A live ledger's tally of an hour, made when the hour has none: the tallies of the latest
 * LEDGER_LIMITS.tallyHours hours are kept, the earliest hour's going first.
 */
function hourTally<T>(
  tallies: WeakMap<TelemetrySnapshot, Map<string, T>>,
  s: TelemetrySnapshot,
  hour: string,
  make: () => T,
): T {
  let hours = tallies.get(s);
  if (hours === undefined) tallies.set(s, (hours = new Map()));
  let tally = hours.get(hour);
  if (tally === undefined) {
    if (hours.size >= L.tallyHours) {
      let earliest: string | undefined;
      for (const kept of hours.keys()) if (earliest === undefined || kept < earliest) earliest = kept;
      hours.delete(earliest!);
    }
    hours.set(hour, (tally = make()));
  }
  return tally;
}

/** Per live ledger and hour: the clients that gave pool names a unit, and the names they gave it to. */
const unitsGiven = new WeakMap<
  TelemetrySnapshot,
  Map<string, { byClient: Map<string, string[]>; order: string[]; next: number }>
>();

/**
 * Adds a unit of evidence for a pool name, at most one per client and hour, and at most
 * LEDGER_LIMITS.clientUnitsPerHour names a client an hour: invented names from one address earn
 * next to nothing, a crawler seen from many addresses or over many hours earns a unit each. A
 * request without an address counts as a client of its own name. True when a unit was added.
 */
function evidence(s: TelemetrySnapshot, name: string, at: string, hour: string, client?: string): boolean {
  const given = hourTally(unitsGiven, s, hour, () => ({ byClient: new Map<string, string[]>(), order: [], next: 0 }));
  // A record without an address (a log that has none) is a client of its own name: one unit an hour.
  const key = client ?? `\0${name}`;
  let names = given.byClient.get(key);
  if (names === undefined) {
    // Past the hour's tally, the client remembered longest gives its place: a flood of clients must
    // not keep a new crawler's from counting (a client given up may give units again). A ring of the
    // keys, not the Map's first key: a Map walks over every entry deleted before it finds its first.
    if (given.order.length >= L.poolClients) {
      given.byClient.delete(given.order[given.next]!);
      given.order[given.next] = key;
      given.next = (given.next + 1) % L.poolClients;
    } else given.order.push(key);
    given.byClient.set(key, (names = []));
  }
  if (names.length >= L.clientUnitsPerHour || names.includes(name)) return false;
  names.push(name);
  const pool = (s.pool ??= {});
  const seen = pool[name];
  if (seen) {
    seen.count++;
    if (at > seen.lastSeen) seen.lastSeen = at;
    return true;
  }
  const sketch = sketchOf(pool);
  if (sketch.size < L.poolCandidates) {
    sketch.set(name, (pool[name] = { count: 1, error: 0, lastSeen: at }));
    return true;
  }
  // Space-Saving: the least counted name leaves (one without a row first) and the new one takes its count, as error.
  let least: string | undefined;
  let leastCount = Infinity;
  const rowed = pooledOf(s);
  const floor = leastCounts.get(sketch) ?? 0;
  for (const [n, e] of sketch) {
    if (e.count < leastCount || (e.count === leastCount && !rowed.has(n) && rowed.has(least!))) {
      least = n;
      leastCount = e.count;
    }
    // None counts less than the floor, and one without a row is the first choice at a count.
    if (leastCount <= floor && !rowed.has(least!)) break;
  }
  leastCounts.set(sketch, leastCount);
  delete pool[least!];
  sketch.delete(least!);
  sketch.set(name, (pool[name] = { count: leastCount + 1, error: leastCount, lastSeen: at }));
  return true;
}

/**
 * A live ledger's sketch as a Map of the same entries, kept beside it: walking the saved object's
 * keys to find the least counted was 150 µs a unit. Dropped where names go in bulk (made again on use).
 */
const sketches = new WeakMap<Record<string, PoolCount>, Map<string, PoolCount>>();
function sketchOf(pool: Record<string, PoolCount>): Map<string, PoolCount> {
  let sketch = sketches.get(pool);
  if (sketch === undefined) {
    sketches.set(pool, (sketch = new Map(Object.entries(pool))));
    leastCounts.delete(sketch);
  }
  return sketch;
}
// The count of the name a sketch last gave up: no name it holds counts less (counts only grow, and
// a new name takes the given-up count plus one), so a scan for the least can stop at one counting it.
const leastCounts = new WeakMap<Map<string, PoolCount>, number>();

/** What the pool holds as evidence for a name: the units it surely has (count less error), 0 when it has left the sketch. */
export const poolCount = (s: TelemetrySnapshot, name: string): number => {
  const e = s.pool?.[name];
  return e ? e.count - e.error : 0;
};

/**
 * The names of a ledger's pool rows, kept beside it: counting every row of the table's ~2,000 to
 * find them was 300 µs a request under a flood of invented names. Dropped (made again on use)
 * wherever rows go in bulk.
 */
const pooledNames = new WeakMap<TelemetrySnapshot, Set<string>>();
function pooledOf(s: TelemetrySnapshot): Set<string> {
  let names = pooledNames.get(s);
  if (names === undefined) {
    names = new Set(
      Object.values(s.families)
        .filter((r) => r.pooled)
        .map((r) => r.family),
    );
    pooledNames.set(s, names);
  }
  return names;
}

/** The pool's row with the least evidence (the least recently seen among equals), if any. */
function weakestPooled(s: TelemetrySnapshot): FamilyRow | undefined {
  let weakest: FamilyRow | undefined;
  let weakestCount = Infinity;
  for (const name of pooledOf(s)) {
    const row = s.families[name];
    if (!row?.pooled) continue;
    const n = poolCount(s, row.family);
    if (n < weakestCount || (n === weakestCount && row.lastSeen < weakest!.lastSeen)) {
      weakest = row;
      weakestCount = n;
    }
  }
  return weakest;
}

/**
 * A row for a pool name that has just gained evidence: while the pool has room, or in place of the
 * row with less evidence than it (that row's counts go to OTHER_FAMILIES). Null when it has not
 * earned one.
 */
function admit(s: TelemetrySnapshot, c: Classification, name: string, at: string): FamilyRow | null {
  const earned = poolCount(s, name);
  if (earned < 1) return null;
  if (pooledOf(s).size >= L.poolRows) {
    const weakest = weakestPooled(s);
    if (!weakest || poolCount(s, weakest.family) >= earned) return null;
    fold(s, weakest);
  }
  const row = (s.families[name] = newRow(name, c, at));
  row.pooled = true;
  pooledOf(s).add(name);
  return row;
}

/** A pool row given up: its counts join OTHER_FAMILIES. */
function fold(s: TelemetrySnapshot, row: FamilyRow): void {
  delete s.families[row.family];
  pooledNames.get(s)?.delete(row.family);
  addRow(otherRow(s, row.firstSeen), row);
}

/**
 * Pool rows and names that went quiet, gone: last seen before the oldest bucket the ledger keeps
 * at `now` (their buckets have all left the wall). The table's families are kept.
 */
export function agePool(s: TelemetrySnapshot, now: Date): void {
  const from = new Date(rangeFrom(now.getTime())).toISOString();
  for (const row of Object.values(s.families)) if (row.pooled && row.lastSeen < from) delete s.families[row.family];
  pooledNames.delete(s);
  for (const [name, e] of Object.entries(s.pool ?? {})) if (e.lastSeen < from) delete s.pool![name];
  if (s.pool) sketches.delete(s.pool);
}

/**
 * A ledger's pool within its bounds, in place: rows of names not in the bot table marked as the
 * pool's (a ledger saved before the pool had none marked; `inTable` says which are the table's),
 * the pool rows past LEDGER_LIMITS.poolRows with the least evidence (then requests) folded into
 * OTHER_FAMILIES, the sketch cut to LEDGER_LIMITS.poolCandidates names.
 */
export function boundPool(s: TelemetrySnapshot, inTable?: (family: string) => boolean): TelemetrySnapshot {
  const unsorted = s.pool === undefined;
  if (unsorted && !inTable) return s;
  const pool = (s.pool ??= {});
  if (inTable)
    for (const row of Object.values(s.families)) {
      if (row.family === OTHER_FAMILIES || row.family === BAIT_BROWSER) continue;
      if (inTable(row.family)) delete row.pooled;
      else if (unsorted || row.pooled) {
        row.pooled = true;
        // An old ledger's row has no evidence counted: its hours seen stand in for it.
        if (unsorted) pool[row.family] ??= { count: Object.keys(row.hourly).length, error: 0, lastSeen: row.lastSeen };
      }
    }
  const names = Object.entries(pool);
  if (names.length > L.poolCandidates) {
    names.sort(([, a], [, b]) => b.count - a.count);
    for (const [name] of names.slice(L.poolCandidates)) delete pool[name];
  }
  sketches.delete(pool);
  const rows = Object.values(s.families).filter((r) => r.pooled);
  if (rows.length > L.poolRows) {
    rows.sort((a, b) => poolCount(s, b.family) - poolCount(s, a.family) || b.requests - a.requests);
    for (const row of rows.slice(L.poolRows)) fold(s, row);
  }
  pooledNames.delete(s);
  return s;
}

/**
 * A row as saved by an older version, with what it lacks filled in (ledgers outlive releases:
 * version 1 had `unverified` and `verifiable`, no daily buckets).
 */
export function reviveRow(row: FamilyRow & { unverified?: number; verifiable?: boolean }): FamilyRow {
  const out = {
    ...newRow(row.family, { bot: true, family: row.family, class: null, known: null, verify: 'none' }, row.firstSeen),
    ...row,
  };
  if (row.unverified !== undefined) {
    out.failed += row.unverified;
    delete (out as { unverified?: number }).unverified;
  }
  delete (out as { verifiable?: boolean }).verifiable;
  out.class ??= 'Bot';
  return out;
}

/** A saved snapshot of any version, as this version reads it. */
export function reviveSnapshot(s: TelemetrySnapshot): TelemetrySnapshot {
  if (s.version === 2) return s;
  return {
    ...s,
    version: 2,
    families: Object.fromEntries(Object.entries(s.families).map(([k, row]) => [k, reviveRow(row)])),
  };
}

/** An ISO time, in ms; NaN when it is none. */
const msOf = (iso: string) => Date.parse(iso);

/**
 * A loaded ledger brought to the server's clock, in place: buckets outside the window kept at
 * `now` are dropped and times ahead of `now` set to `now`. A ledger saved by a version that took
 * any date (a record of year 9999 filled every bucket ahead of the clock and hid live traffic)
 * shows live traffic again from its first request on.
 */
export function keepClock(s: TelemetrySnapshot, now: Date): TelemetrySnapshot {
  const ms = now.getTime();
  const iso = now.toISOString();
  const hours = hourSpan(ms);
  const days = daySpan(ms);
  // Parsed, not compared as strings: a year past 9999 is written "+010000-…".
  const within = (key: string, span: { oldest: string; newest: string }) =>
    msOf(key) >= msOf(span.oldest) && msOf(key) <= msOf(span.newest);
  const ahead = (at: string) => !(msOf(at) <= ms);
  for (const row of Object.values(s.families)) {
    for (const key of Object.keys(row.hourly)) if (!within(key, hours)) delete row.hourly[key];
    for (const key of Object.keys(row.daily)) if (!within(key, days)) delete row.daily[key];
    capMap(row.paths, L.pathsPerFamily);
    capMap(row.hosts, L.hostsPerFamily);
    if (ahead(row.lastSeen)) row.lastSeen = iso;
    if (ahead(row.firstSeen)) row.firstSeen = iso;
  }
  for (const r of Object.values(s.referrals ?? {})) {
    for (const key of Object.keys(r.hourly)) if (!within(key, hours)) delete r.hourly[key];
    for (const key of Object.keys(r.daily)) if (!within(key, days)) delete r.daily[key];
    if (ahead(r.lastSeen)) r.lastSeen = iso;
    if (ahead(r.firstSeen)) r.firstSeen = iso;
  }
  s.recent = s.recent.filter((r) => !ahead(r.at));
  if (ahead(s.updatedAt)) s.updatedAt = iso;
  if (ahead(s.windowStartedAt)) s.windowStartedAt = iso;
  return s;
}

/** The funnel's steps past presence. */
export type FunnelStep = 'convertReads' | 'oaths' | 'messages';

// The ISO time and its hour and day keys, computed once per distinct millisecond: at tens of
// thousands of requests a second, toISOString was half of what counting a request cost.
let lastMs = NaN;
let lastIso = '';
let lastHour = '';
let lastDay = '';
function timeKeys(at: Date, iso?: string): void {
  const ms = at.getTime();
  if (ms === lastMs) return;
  lastMs = ms;
  // An ingested line's time comes as the ISO string it was parsed to (toISOString's).
  lastIso = iso ?? at.toISOString();
  lastHour = `${lastIso.slice(0, 13)}:00:00Z`;
  lastDay = lastIso.slice(0, 10);
}

/**
 * Adds one request to the ledger. Pure bookkeeping on the snapshot: no I/O, the server's clock
 * passed in as `now` (a live request's `at`). Returns false when the request is neither a bot nor
 * a bait hit, or is dated outside ledgerRange(now) (not counted; one up to LEDGER_SKEW_MS ahead
 * counts as `now`). No bucket is ever ahead of `now`, and the buckets kept are those of the
 * clock's last LEDGER_LIMITS.hours hours and LEDGER_LIMITS.days days, whatever the records say.
 * It reads `e` and keeps none of it (telemetry reuses one event for every request).
 */
export function count(s: TelemetrySnapshot, e: LedgerEvent, now: Date): boolean {
  const c = e.classification;
  if (!c.bot && !e.bait && !c.unknown) return false;
  const when = ledgerTime(e.at, now);
  if (when === null) return false;
  // A group's requests are all within the range or all outside: an ingest worker groups lines by
  // the hour, the range starts on one, and only lines dated hours before the clock are grouped.
  const n = e.n ?? 1;
  // An unknown client is counted apart, never in a family's row.
  if (c.unknown) s.presence.unknownClients = (s.presence.unknownClients ?? 0) + n;
  if (!c.bot && !e.bait) return true;
  timeKeys(when, when === e.at ? e.atIso : undefined);
  const at = lastIso;
  const since = e.since !== undefined && e.since < at ? e.since : null;
  const hour = lastHour;
  const day = lastDay;
  if (at > s.updatedAt) s.updatedAt = at;
  if (e.bait) s.presence.baitHits += n;
  if (c.bot) {
    s.observedRequests += n;
    if (c.known) s.presence.namedBotHits += n;
  }
  const row = rowOf(s, c, at, hour, e.client);
  const path = cut(e.path, L.pathChars);
  row.requests += n;
  if ((since ?? at) < row.firstSeen) row.firstSeen = since ?? at;
  if (at > row.lastSeen) row.lastSeen = at;
  bump(row.status, statusClass(e.status), n);
  // A new bucket: the oldest may have left the clock's window (pruned here, not per request).
  if (bump(row.hourly, hour, n)) prune(row.hourly, hourSpan(now.getTime()), L.hours);
  if (bump(row.daily, day, n)) prune(row.daily, daySpan(now.getTime()), L.days);
  // A claim found false, still being checked (telemetry adds it with attribute() once its check
  // answers) or not checked when it could have been, is counted and says nothing of the crawler it
  // names.
  if (!c.bot || (e.says ?? (e.verification !== null && e.verification !== 'failed'))) attributeTo(row, e, path, at, n);
  if (e.verification) row[e.verification] += n;
  // A claim found false is shown as what it is: a spoofed request of that name.
  const entry = {
    at,
    family: row.family,
    class: c.bot && e.verification === 'failed' ? 'Cosplay' : row.class,
    path,
    status: e.status,
  };
  if (e.recent) {
    e.recent.push(entry);
    return true;
  }
  s.recent.push(entry);
  // Trimmed in halves, not by a shift per request (a shift was most of what count() cost): readers take recentOf(s).
  if (s.recent.length >= 2 * L.recent) s.recent.splice(0, s.recent.length - L.recent);
  return true;
}

/**
 * What a request says of its family, beyond being one of its requests: the paths and hosts it asks
 * for (slots the first comers take), the traps it falls in, its robots.txt and usage judgements,
 * its funnel steps. A spoofer's claims must not fill them, nor make a crawler break robots.txt.
 */
function attributeTo(row: FamilyRow, e: LedgerEvent, path: string, at: string, n: number): void {
  const bot = e.classification.bot;
  bump(row.paths, path, n, L.pathsPerFamily);
  bump(row.hosts, e.host === '' ? '(none)' : cut(e.host, L.hostChars), n, L.hostsPerFamily);
  if (e.bait) row.baitHits += n;
  if (isDeep(e.path)) row.deepHits += n;
  if (e.path === '/robots.txt') row.robotsFetches += n;
  if (e.disallowed && bot) row.violations += n;
  if (e.robots && bot) countRobots(robotsPart(row), e.robots, path, at, n);
  if (bot && (e.preferenceBroken || e.format)) countUsage(usagePart(row), e, n);
  if (e.step && e.status >= 200 && e.status < 300) row[e.step] += n;
}

/**
 * Adds what a request counted while its claim was being checked says of its family (count()
 * left it out), once the check did not find the claim false. `e` is the request's event as counted.
 */
export function attribute(s: TelemetrySnapshot, family: string, e: LedgerEvent): void {
  const row = s.families[family];
  if (!row) return;
  attributeTo(row, e, cut(e.path, L.pathChars), e.atIso ?? e.at.toISOString(), e.n ?? 1);
}

/**
 * Adds `count` requests counted in order to the recent ones, of which `last` are the latest entries
 * (at least the last 2 × LEDGER_LIMITS.recent, or all): the ledger ends as pushing each in turn
 * would have left it (it trims to LEDGER_LIMITS.recent each time it reaches twice as many).
 */
export function addRecent(s: TelemetrySnapshot, count: number, last: readonly RecentEntry[]): void {
  if (count <= 0) return;
  // A ledger holding twice as many or more (never left so by count()) is trimmed at the first push.
  const total = Math.min(s.recent.length, 2 * L.recent - 1) + count;
  const keep = total < 2 * L.recent ? total : L.recent + ((total - 2 * L.recent) % L.recent);
  s.recent = [...s.recent, ...last].slice(-keep);
}

/** The last LEDGER_LIMITS.recent requests counted, oldest first (the ledger holds up to twice as many). */
export const recentOf = (s: TelemetrySnapshot): TelemetrySnapshot['recent'] => s.recent.slice(-L.recent);

export const OTHER_OPERATORS = '(other operators)';

/** Per live ledger and hour: visits each client was counted as sent by each operator. */
const referralsGiven = new WeakMap<TelemetrySnapshot, Map<string, Map<string, number>>>();

/**
 * Whether one more visit of `client` (a hashed address) sent by `operator` may count this hour: at
 * most LEDGER_LIMITS.referralsPerClientHour, so one address cannot make an AI product look like it
 * sends hundreds of people. Past LEDGER_LIMITS.referralClients clients in the hour, new ones count
 * uncapped: a flood of addresses must not stop real visits from counting.
 */
function referralAllowed(s: TelemetrySnapshot, operator: string, hour: string, client: string): boolean {
  const byClient = hourTally(referralsGiven, s, hour, () => new Map<string, number>());
  const key = `${client}\n${operator}`;
  const n = byClient.get(key);
  if (n === undefined) {
    if (byClient.size < L.referralClients) byClient.set(key, 1);
    return true;
  }
  if (n >= L.referralsPerClientHour) return false;
  byClient.set(key, n + 1);
  return true;
}

/**
 * Adds one visit an AI product sent (a person's request whose Referer or utm_source names one).
 * Same clock rules as count(); false when dated outside ledgerRange(now), or when `client` (a
 * hashed address) has had its hour's share (referralAllowed). Bounded like families:
 * LEDGER_LIMITS.referralOperators rows, LEDGER_LIMITS.sourcesPerOperator sources in each.
 */
export function countReferral(
  s: TelemetrySnapshot,
  operator: string,
  source: string,
  at: Date,
  now: Date,
  n = 1,
  since?: string,
  atIso?: string,
  client?: string,
): boolean {
  const when = ledgerTime(at, now);
  if (when === null) return false;
  timeKeys(when, when === at ? atIso : undefined);
  if (client !== undefined && !referralAllowed(s, operator, lastHour, client)) return false;
  const iso = lastIso;
  const first = since !== undefined && since < iso ? since : null;
  const rows = (s.referrals ??= {});
  let name = cut(operator, L.nameChars);
  if (!(name in rows) && Object.keys(rows).length >= L.referralOperators - 1) name = OTHER_OPERATORS;
  const row = (rows[name] ??= {
    operator: name,
    visits: 0,
    sources: {},
    hourly: {},
    daily: {},
    firstSeen: iso,
    lastSeen: iso,
  });
  row.visits += n;
  if ((first ?? iso) < row.firstSeen) row.firstSeen = first ?? iso;
  if (iso > row.lastSeen) row.lastSeen = iso;
  bump(row.sources, cut(source, L.hostChars), n, L.sourcesPerOperator);
  if (bump(row.hourly, lastHour, n)) prune(row.hourly, hourSpan(now.getTime()), L.hours);
  if (bump(row.daily, lastDay, n)) prune(row.daily, daySpan(now.getTime()), L.days);
  if (iso > s.updatedAt) s.updatedAt = iso;
  return true;
}

/** Adds the referral rows of `from` into `into` (several processes' ledgers), within the same bounds. */
function mergeReferrals(into: TelemetrySnapshot, from: TelemetrySnapshot): void {
  if (!from.referrals) return;
  const rows = (into.referrals ??= {});
  for (const r of Object.values(from.referrals)) {
    let row = rows[r.operator];
    if (!row && Object.keys(rows).length < L.referralOperators) {
      rows[r.operator] = structuredClone(r);
      continue;
    }
    row ??= rows[OTHER_OPERATORS] ??= {
      operator: OTHER_OPERATORS,
      visits: 0,
      sources: {},
      hourly: {},
      daily: {},
      firstSeen: r.firstSeen,
      lastSeen: r.lastSeen,
    };
    row.visits += r.visits;
    for (const k of ['sources', 'hourly', 'daily'] as const) addMaps(row[k], r[k]);
    if (r.firstSeen < row.firstSeen) row.firstSeen = r.firstSeen;
    if (r.lastSeen > row.lastSeen) row.lastSeen = r.lastSeen;
  }
}

/** Adds a verification answer that arrived after its requests were counted. */
export function settle(s: TelemetrySnapshot, family: string, outcome: Outcome, requests: number): void {
  const row = s.families[family] ?? s.families[OTHER_FAMILIES];
  if (row) row[outcome] += requests;
}

/** The farm score of a species: what its visits are worth, reading most and writing more. */
export const farmScore = (r: FamilyRow) =>
  r.requests + 2 * r.deepHits + 5 * r.baitHits + 10 * r.convertReads + 50 * r.oaths + 20 * r.messages;

const addMaps = (into: Record<string, number>, from: Record<string, number>) => {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
};

/** Adds ledgers of several processes into one view (pure; the inputs are not changed). */
export function mergeSnapshots(own: TelemetrySnapshot, others: TelemetrySnapshot[]): TelemetrySnapshot {
  if (others.length === 0) return reviveSnapshot(own);
  const out = structuredClone(reviveSnapshot(own));
  for (const o of others) {
    if (o.windowStartedAt < out.windowStartedAt) out.windowStartedAt = o.windowStartedAt;
    if (o.updatedAt > out.updatedAt) out.updatedAt = o.updatedAt;
    out.observedRequests += o.observedRequests;
    out.presence.namedBotHits += o.presence.namedBotHits;
    out.presence.baitHits += o.presence.baitHits;
    if (o.presence.unknownClients)
      out.presence.unknownClients = (out.presence.unknownClients ?? 0) + o.presence.unknownClients;
    mergeReferrals(out, o);
    out.recent = [...out.recent, ...o.recent].sort((a, b) => a.at.localeCompare(b.at)).slice(-L.recent);
    for (const f of Object.values(reviveSnapshot(o).families)) {
      const row = out.families[f.family];
      // Every process's rows first; the pool is bounded once all are in (boundPool).
      if (row) addRow(row, f);
      else out.families[f.family] = structuredClone(f);
    }
    // The pool's evidence adds up too (Space-Saving sketches merge by adding their counts).
    if (!o.pool) continue;
    const pool = (out.pool ??= {});
    for (const [name, e] of Object.entries(o.pool)) {
      const mine = pool[name];
      if (!mine) pool[name] = { ...e };
      else {
        mine.count += e.count;
        mine.error += e.error;
        if (e.lastSeen > mine.lastSeen) mine.lastSeen = e.lastSeen;
      }
    }
  }
  // Several processes' pools together stay within the same bounds.
  return boundPool(out);
}

/** Adds one row's counts into another's (another process's row of the family, or a pool row given up). */
function addRow(row: FamilyRow, f: FamilyRow): void {
  for (const k of [
    'requests',
    'baitHits',
    'deepHits',
    'robotsFetches',
    'violations',
    'convertReads',
    'oaths',
    'messages',
    'verified',
    'failed',
    'unverifiable',
  ] as const)
    row[k] += f[k];
  // Paths and hosts within a row's bounds: "(other families)" takes every pool row given up.
  for (const [k, n] of Object.entries(f.paths)) bump(row.paths, k, n, L.pathsPerFamily);
  for (const [k, n] of Object.entries(f.hosts)) bump(row.hosts, k, n, L.hostsPerFamily);
  for (const k of ['status', 'hourly', 'daily'] as const) addMaps(row[k], f[k]);
  if (f.robots) mergeRobots(robotsPart(row), f.robots);
  if (f.usage) mergeUsage(usagePart(row), f.usage);
  if (f.firstSeen < row.firstSeen) row.firstSeen = f.firstSeen;
  if (f.lastSeen > row.lastSeen) row.lastSeen = f.lastSeen;
}

/** A family's robots part, made on first use (a row saved before it existed has none). */
export const robotsPart = (row: FamilyRow): RobotsPart =>
  (row.robots ??= { judged: 0, violations: 0, afterFetch: 0, fetchedAt: {}, rules: {} });

const OTHER_RULE = '(other)';

/** The rule's entry, made on first sight; past LEDGER_LIMITS.robotsRules, new rules share "(other)". */
function ruleOf(p: RobotsPart, r: Omit<RobotsRuleCount, 'requests' | 'afterFetch' | 'paths'>): RobotsRuleCount {
  let key = r.line === 0 ? OTHER_RULE : `${r.host} ${r.version} ${r.line}`;
  if (!(key in p.rules) && Object.keys(p.rules).length >= L.robotsRules - 1) {
    key = OTHER_RULE;
    r = { host: '(other)', version: '', line: 0, rule: '(other rules)', agent: '' };
  }
  return (p.rules[key] ??= { ...r, requests: 0, afterFetch: 0, paths: {} });
}

/**
 * Adds one judged request to a family's robots part: a fetch of /robots.txt is remembered per
 * host (the first one); a request a Disallow rule forbids is counted under its rule and path,
 * and as sent after a fetch when the family had fetched that host's file before it.
 */
function countRobots(p: RobotsPart, v: RobotsVerdict, path: string, at: string, n: number): void {
  p.judged += n;
  const host = cut(v.host, L.hostChars);
  if (path === '/robots.txt') {
    const first = p.fetchedAt[host];
    if (first === undefined ? Object.keys(p.fetchedAt).length < L.hostsPerFamily : at < first) p.fetchedAt[host] = at;
  }
  if (!v.broke) return;
  const fetched = p.fetchedAt[host];
  const after = fetched !== undefined && fetched <= at ? n : 0;
  p.violations += n;
  p.afterFetch += after;
  const rule = ruleOf(p, {
    host,
    version: v.version,
    line: v.broke.line,
    rule: cut(v.broke.text, L.robotsChars),
    agent: cut(v.broke.agent, L.nameChars),
  });
  rule.requests += n;
  rule.afterFetch += after;
  bump(rule.paths, cut(path, L.robotsChars), n, L.robotsPathsPerRule);
}

/** Adds another process's robots part into one (within the same bounds). */
function mergeRobots(into: RobotsPart, from: RobotsPart): void {
  into.judged += from.judged;
  into.violations += from.violations;
  into.afterFetch += from.afterFetch;
  for (const [host, at] of Object.entries(from.fetchedAt)) {
    const mine = into.fetchedAt[host];
    if (mine === undefined ? Object.keys(into.fetchedAt).length < L.hostsPerFamily : at < mine)
      into.fetchedAt[host] = at;
  }
  for (const r of Object.values(from.rules)) {
    const rule = ruleOf(into, r);
    rule.requests += r.requests;
    rule.afterFetch += r.afterFetch;
    for (const [path, n] of Object.entries(r.paths)) bump(rule.paths, path, n, L.robotsPathsPerRule);
  }
}

/** A family's usage part, made on first use (a row saved before it existed has none). */
export const usagePart = (row: FamilyRow): UsagePart =>
  (row.usage ??= { preferenceBroken: 0, markdown: 0, html: 0, json: 0, markdownTokens: 0 });

function countUsage(p: UsagePart, e: LedgerEvent, n: number): void {
  if (e.preferenceBroken) p.preferenceBroken += n;
  if (e.format) p[e.format] += n;
  if (e.format === 'markdown') p.markdownTokens += (e.markdownTokens ?? 0) * n;
}

/** Adds another process's usage part into one. */
function mergeUsage(into: UsagePart, from: UsagePart): void {
  for (const k of ['preferenceBroken', 'markdown', 'html', 'json', 'markdownTokens'] as const) into[k] += from[k] ?? 0;
}
