/**
 * From the /bot-wall.json document to what the bot wall page shows. The one place that knows the
 * document's field names: the page and its live script both go through `toWallView`, and a field
 * the document lacks degrades to what older shapes carry (or to nothing), never to an error.
 * Pure and DOM-free: it runs on the server and in the browser.
 */
import { readRobotsTxt, type RobotsTxtView } from './bot-wall-robots.ts';

export const RANGES = {
  '1h': { label: 'Last hour', bucket: 'hour', span: 1 },
  '24h': { label: '24 hours', bucket: 'hour', span: 24 },
  '7d': { label: '7 days', bucket: 'day', span: 7 },
} as const;
export type RangeKey = keyof typeof RANGES;
export const DEFAULT_RANGE: RangeKey = '24h';
// Own keys only: `?range=constructor` names no range.
export const isRange = (v: unknown): v is RangeKey => typeof v === 'string' && Object.hasOwn(RANGES, v);

export type VerifyMethod = 'ip-ranges' | 'reverse-dns' | 'web-bot-auth' | 'none' | 'unknown';
export const METHOD_TEXT: Record<VerifyMethod, string> = {
  'ip-ranges': 'published IP ranges',
  'reverse-dns': 'reverse DNS with forward confirmation',
  'web-bot-auth': 'Web Bot Auth signatures',
  none: 'cannot be verified: the operator publishes no way',
  unknown: 'verifiable (method not reported)',
};

/** Classes by what a family does; the first three are the AI groups the wall shows apart. */
export const CLASS_GROUPS = [
  { class: 'Eater', label: 'Training (Eater)', about: 'collects pages to train models or build datasets' },
  { class: 'Crawler', label: 'Search (Crawler)', about: 'indexes pages for search' },
  {
    class: 'Intelligence',
    label: "On a person's behalf (Intelligence)",
    about: 'assistants and agents fetching live for someone',
  },
  { class: 'Bot', label: 'Other bots', about: 'monitors, previews, SEO tools and the rest' },
  { class: 'Cosplay', label: 'Failed verification (Cosplay)', about: 'claims a known bot and fails its check' },
] as const;

export interface Bucket {
  /** ISO start of the bucket. */
  start: string;
  requests: number;
}

export interface FamilyView {
  family: string;
  operator: string | null;
  class: string;
  /** Requests since the window started. */
  total: number;
  /** Requests in the buckets of the selected range. */
  requests: number;
  firstSeen: string | null;
  lastSeen: string | null;
  paths: { path: string; requests: number }[];
  statuses: { status: string; requests: number }[];
  verification: { method: VerifyMethod; verified: number; failed: number; unverifiable: number };
  robotsTxtFetches: number;
  disallowedHits: number;
  /** Requests judged against the robots.txt rules for this crawler (bot-wall-robots.ts). */
  robotsTxt: RobotsTxtView;
  funnel: { presence: number; convertReads: number; oaths: number; messages: number } | null;
}

export interface WallView {
  farm: string;
  tagline: string;
  generatedAt: string;
  windowStartedAt: string;
  range: RangeKey;
  /** Every family, most requests in the range first. */
  families: FamilyView[];
  /** The range's buckets, oldest first, zeros included: the columns of the time chart. */
  series: (Bucket & { label: string })[];
  bucket: 'hour' | 'day';
  /** False when the document holds no buckets for the range (counts then are since window start). */
  bucketed: boolean;
  /** True when days were folded from hourly buckets, which reach back 48 hours only. */
  folded: boolean;
  totals: {
    requests: number;
    families: number;
    verified: number;
    failed: number;
    unverifiable: number;
    robotsTxtFetches: number;
    disallowedHits: number;
    baitHits: number;
    /** Requests from clients no list names and nothing shows to be bots (absent before the count: 0). */
    unknownClients: number;
  };
  classes: {
    class: string;
    label: string;
    about: string;
    requests: number;
    families: { family: string; requests: number }[];
  }[];
  statuses: { status: string; requests: number }[];
}

type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Loose) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const floorTo = (t: number, size: number) => Math.floor(t / size) * size;

/** Buckets from either `[{hour|day|start, requests}]` or `{iso: requests}`, keyed by start time. */
function readBuckets(v: unknown, key: 'hour' | 'day'): Map<number, number> | null {
  const out = new Map<number, number>();
  if (Array.isArray(v)) {
    for (const b of v) {
      const t = Date.parse(String(obj(b)[key] ?? obj(b).start ?? ''));
      if (!Number.isNaN(t)) out.set(t, (out.get(t) ?? 0) + num(obj(b).requests));
    }
    return out;
  }
  if (v && typeof v === 'object') {
    for (const [k, n] of Object.entries(v as Loose)) {
      const t = Date.parse(k);
      if (!Number.isNaN(t)) out.set(t, (out.get(t) ?? 0) + num(n));
    }
    return out;
  }
  return null;
}

const METHODS = new Set(['ip-ranges', 'reverse-dns', 'web-bot-auth', 'none']);
function readVerification(v: unknown, requests: number): FamilyView['verification'] {
  // Today's shape: 'not verifiable' or {verified, unverified}; the richer one adds method and splits.
  if (v === 'not verifiable' || v === 'none') return { method: 'none', verified: 0, failed: 0, unverifiable: requests };
  const o = obj(v);
  const method = typeof o.method === 'string' && METHODS.has(o.method) ? (o.method as VerifyMethod) : 'unknown';
  if (method === 'none')
    return {
      method,
      verified: 0,
      failed: 0,
      unverifiable: Math.max(num(o.unverifiable), requests - num(o.verified) - num(o.failed)),
    };
  return {
    method,
    verified: num(o.verified),
    failed: num(o.failed ?? o.unverified),
    unverifiable: num(o.unverifiable),
  };
}

/** The starts of the buckets that overlap the range, oldest first (hourly buckets cannot cut at 60 minutes). */
export function rangeBuckets(range: RangeKey, now: Date): { bucket: 'hour' | 'day'; starts: number[] } {
  const r = RANGES[range];
  const size = r.bucket === 'hour' ? HOUR : DAY;
  const last = floorTo(now.getTime(), size);
  return { bucket: r.bucket, starts: Array.from({ length: r.span + 1 }, (_, i) => last - (r.span - i) * size) };
}

const bucketLabel = (t: number, bucket: 'hour' | 'day') => {
  const iso = new Date(t).toISOString();
  return bucket === 'hour' ? `${iso.slice(11, 13)}:00` : iso.slice(5, 10);
};

const sortCounts = <T extends { requests: number }>(rows: T[], name: (r: T) => string) =>
  rows.sort((a, b) => b.requests - a.requests || name(a).localeCompare(name(b)));

/** The page's view of a bot wall document for one range, at `now`. */
export function toWallView(doc: unknown, range: RangeKey, now: Date): WallView {
  const d = obj(doc);
  const traffic = obj(d.botTraffic);
  const species = new Map(arr(d.species).map((s) => [String(obj(s).species), obj(s)]));
  const { bucket, starts } = rangeBuckets(range, now);
  const first = starts[0]!;
  const seriesTotals = new Map(starts.map((t) => [t, 0]));
  let bucketed = false;
  let folded = false;

  const counted: (Omit<FamilyView, 'requests'> & { requests: number | null })[] = arr(traffic.families).map((raw) => {
    const f = obj(raw);
    const name = String(f.family ?? 'unnamed');
    const s = species.get(name) ?? {};
    const total = num(f.requests);
    const hourly = readBuckets(f.hourly, 'hour') ?? readBuckets(s.hourly, 'hour');
    let buckets = bucket === 'hour' ? hourly : readBuckets(f.daily, 'day');
    if (bucket === 'day' && !buckets && hourly) {
      // No daily buckets in the document: fold the hourly ones (they reach back 48 hours only).
      buckets = new Map();
      folded = true;
      for (const [t, n] of hourly) buckets.set(floorTo(t, DAY), (buckets.get(floorTo(t, DAY)) ?? 0) + n);
    }
    // Null until the second pass: a family without buckets counts its total only if no family has any.
    let requests: number | null = null;
    if (buckets) {
      bucketed = true;
      requests = 0;
      for (const [t, n] of buckets) {
        if (t < first || !seriesTotals.has(t)) continue;
        requests += n;
        seriesTotals.set(t, seriesTotals.get(t)! + n);
      }
    }
    const robots = obj(s.robots);
    const funnel = obj(s.funnel);
    const status = obj(f.statusCounts ?? f.statuses);
    return {
      family: name,
      operator: str(f.operator),
      class: str(f.class) ?? str(s.intelligence_class) ?? 'Bot',
      total,
      requests,
      firstSeen: str(f.firstSeen),
      lastSeen: str(f.lastSeen) ?? str(s.last_seen),
      paths: sortCounts(
        arr(f.topPaths).map((p) => ({ path: String(obj(p).path ?? ''), requests: num(obj(p).requests) })),
        (p) => p.path,
      ),
      statuses: sortCounts(
        Object.entries(status)
          .map(([k, n]) => ({ status: k, requests: num(n) }))
          .filter((x) => x.requests > 0),
        (x) => x.status,
      ),
      verification: readVerification(f.verification ?? s.verification, total),
      robotsTxtFetches: num(f.robotsTxtFetches ?? robots.fetches),
      disallowedHits: num(f.disallowedHits ?? robots.disallowed_hits),
      robotsTxt: readRobotsTxt(f.robotsTxt, num(f.robotsTxtFetches ?? robots.fetches)),
      funnel: s.funnel
        ? {
            presence: num(funnel.presence),
            convertReads: num(funnel.convert_reads),
            oaths: num(funnel.oaths),
            messages: num(funnel.messages),
          }
        : null,
    };
  });
  const families: FamilyView[] = counted.map((f) => ({ ...f, requests: f.requests ?? (bucketed ? 0 : f.total) }));
  families.sort((a, b) => b.requests - a.requests || b.total - a.total || a.family.localeCompare(b.family));

  const seen = families.filter((f) => f.requests > 0);
  const sum = (pick: (f: FamilyView) => number) => families.reduce((n, f) => n + pick(f), 0);
  const statuses = new Map<string, number>();
  for (const f of families)
    for (const s of f.statuses) statuses.set(s.status, (statuses.get(s.status) ?? 0) + s.requests);
  const telemetry = obj(d.telemetry);
  const spoofedShare = (f: FamilyView) =>
    f.total === 0 ? 0 : Math.min(f.requests, Math.round((f.requests * f.verification.failed) / f.total));
  return {
    farm: str(d.farm) ?? 'Bot wall',
    tagline: str(d.tagline) ?? '',
    generatedAt: str(d.generatedAt) ?? now.toISOString(),
    windowStartedAt: str(traffic.windowStartedAt) ?? str(telemetry.window_started_at) ?? '',
    range,
    families,
    series: starts.map((t) => ({
      start: new Date(t).toISOString(),
      label: bucketLabel(t, bucket),
      requests: seriesTotals.get(t)!,
    })),
    bucket,
    bucketed,
    folded,
    totals: {
      // The meter is the sum of the chart's columns, so the two always agree.
      requests: sum((f) => f.requests),
      families: seen.length,
      verified: sum((f) => f.verification.verified),
      failed: sum((f) => f.verification.failed),
      unverifiable: sum((f) => f.verification.unverifiable),
      robotsTxtFetches: sum((f) => f.robotsTxtFetches),
      disallowedHits: sum((f) => f.disallowedHits),
      baitHits: num(obj(d.meters).fisher_hits),
      unknownClients: num(obj(d.meters).unknown_client_requests),
    },
    classes: CLASS_GROUPS.map((g) => {
      const members = seen.flatMap((f) => {
        // Request by request: a family's failed verifications are spoofed requests of its name (Cosplay),
        // the rest its own class's (in the range, in the same share as since the window started).
        const spoofed = f.class === 'Cosplay' ? 0 : spoofedShare(f);
        const n =
          g.class === 'Cosplay' && f.class !== 'Cosplay' ? spoofed : f.class === g.class ? f.requests - spoofed : 0;
        return n > 0 ? [{ family: f.family, requests: n }] : [];
      });
      // Most requests in the class first (a family's spoofed share need not follow its own order).
      members.sort((a, b) => b.requests - a.requests);
      return { ...g, requests: members.reduce((n, m) => n + m.requests, 0), families: members };
    }),
    statuses: sortCounts(
      [...statuses].map(([status, requests]) => ({ status, requests })),
      (s) => s.status,
    ),
  };
}
