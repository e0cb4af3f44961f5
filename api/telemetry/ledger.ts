import { funnelStepOf } from '../operations/paths.ts';
import type { Classification } from './classify.ts';

/** Everything counted for one family (the family a User-Agent claims). */
export interface FamilyRow {
  family: string;
  class: string;
  /** True when the operator documents a way to verify the claim. */
  verifiable: boolean;
  requests: number;
  firstSeen: string;
  lastSeen: string;
  paths: Record<string, number>;
  status: Record<string, number>;
  hosts: Record<string, number>;
  /** Requests per hour, keyed by the hour's ISO start (the last 48 hours). */
  hourly: Record<string, number>;
  baitHits: number;
  deepHits: number;
  robotsFetches: number;
  violations: number;
  convertReads: number;
  oaths: number;
  messages: number;
  verified: number;
  unverified: number;
}

/** The persisted telemetry ledger. */
export interface TelemetrySnapshot {
  version: 1;
  windowStartedAt: string;
  updatedAt: string;
  observedRequests: number;
  presence: { namedBotHits: number; baitHits: number };
  families: Record<string, FamilyRow>;
  recent: { at: string; family: string; class: string; path: string; status: number }[];
}

/** One request as the ledger counts it. */
export interface LedgerEvent {
  at: Date;
  method: string;
  path: string;
  status: number;
  host: string;
  classification: Classification;
  /** The verification answer for a verifiable claim; null while it is being checked. */
  verification: 'verified' | 'unverified' | null;
  bait: boolean;
  disallowed: boolean;
}

const MAX_PATHS = 100;
const MAX_FAMILIES = 500;
const HOURS = 48;
const RECENT = 20;
// Browsers caught in a bait path: a presence with no claim of its own.
export const BAIT_BROWSER = 'browser in a bait path';

export const emptySnapshot = (now: Date): TelemetrySnapshot => ({
  version: 1,
  windowStartedAt: now.toISOString(),
  updatedAt: now.toISOString(),
  observedRequests: 0,
  presence: { namedBotHits: 0, baitHits: 0 },
  families: {},
  recent: [],
});

/** Adds to a counter map; returns true when the key is new. Past `cap` keys, new ones fold into "(other)". */
const bump = (map: Record<string, number>, key: string, by = 1, cap = Infinity): boolean => {
  if (key in map) {
    map[key]! += by;
    return false;
  }
  if (Object.keys(map).length >= cap) key = '(other)';
  map[key] = (map[key] ?? 0) + by;
  return true;
};

const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;
/** The documents a crawler lands on; anything else it reads is a deep hit. */
export const SURFACE_PATHS = new Set(['/', '/index.html', '/robots.txt', '/sitemap.xml', '/llms.txt', '/ai.txt', '/.well-known/ai.txt', '/favicon.ico', '/api/convert']);
export const isDeep = (path: string) => !SURFACE_PATHS.has(path);

/** True when the family's operator documents a way to check the claim. */
const verifiable = (c: Classification) => (c.known?.rdns?.length ?? 0) > 0 || (c.known?.signature_agents?.length ?? 0) > 0;

/** A family's row, made on first sight; past MAX_FAMILIES, new families share one row. */
function rowOf(s: TelemetrySnapshot, c: Classification, at: string, canVerify: boolean): FamilyRow {
  let name = c.family ?? BAIT_BROWSER;
  if (!(name in s.families) && Object.keys(s.families).length >= MAX_FAMILIES) name = '(other families)';
  return (s.families[name] ??= {
    family: name,
    class: c.class ?? 'Cosplay',
    verifiable: canVerify,
    requests: 0,
    firstSeen: at,
    lastSeen: at,
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
    verified: 0,
    unverified: 0,
  });
}

/** The funnel's steps past presence. */
export type FunnelStep = 'convertReads' | 'oaths' | 'messages';

/**
 * A funnel step a bot took another way than its HTTP route (an MCP tool call): added to the
 * family's row, not counted as a request (the request that carried it is counted on its own).
 */
export function countStep(s: TelemetrySnapshot, c: Classification, step: FunnelStep, at: Date): boolean {
  if (!c.bot) return false;
  const iso = at.toISOString();
  rowOf(s, c, iso, verifiable(c))[step]++;
  s.updatedAt = iso;
  return true;
}

/**
 * Adds one request to the ledger. Pure bookkeeping on the snapshot: no I/O, time passed in.
 * Returns false when the request is neither a bot nor a bait hit (not counted).
 */
export function count(s: TelemetrySnapshot, e: LedgerEvent): boolean {
  const c = e.classification;
  if (!c.bot && !e.bait) return false;
  const at = e.at.toISOString();
  s.updatedAt = at;
  if (e.bait) s.presence.baitHits++;
  if (c.bot) {
    s.observedRequests++;
    if (c.known) s.presence.namedBotHits++;
  }
  const row = rowOf(s, c, at, e.verification !== null || verifiable(c));
  row.requests++;
  row.lastSeen = at;
  bump(row.paths, e.path, 1, MAX_PATHS);
  bump(row.status, statusClass(e.status));
  bump(row.hosts, e.host || '(none)', 1, 20);
  if (bump(row.hourly, `${at.slice(0, 13)}:00:00Z`)) {
    const hours = Object.keys(row.hourly).sort();
    for (const old of hours.slice(0, Math.max(0, hours.length - HOURS))) delete row.hourly[old];
  }
  if (e.bait) row.baitHits++;
  if (isDeep(e.path)) row.deepHits++;
  if (e.path === '/robots.txt') row.robotsFetches++;
  if (e.disallowed && c.bot) row.violations++;
  const ok = e.status >= 200 && e.status < 300;
  // The funnel step is the one the request's operation declares (api/operations/table.ts).
  const step = ok ? funnelStepOf(e.method, e.path) : undefined;
  if (step) row[step]++;
  if (e.verification === 'verified') row.verified++;
  if (e.verification === 'unverified') row.unverified++;
  s.recent.push({ at, family: row.family, class: row.class, path: e.path, status: e.status });
  if (s.recent.length > RECENT) s.recent.shift();
  return true;
}

/** Adds a verification answer that arrived after its requests were counted. */
export function settle(s: TelemetrySnapshot, family: string, verdict: 'verified' | 'unverified', requests: number): void {
  const row = s.families[family];
  if (row) row[verdict] += requests;
}

/** The farm score of a species: what its visits are worth, reading most and writing more. */
export const farmScore = (r: FamilyRow) => r.requests + 2 * r.deepHits + 5 * r.baitHits + 10 * r.convertReads + 50 * r.oaths + 20 * r.messages;

const addMaps = (into: Record<string, number>, from: Record<string, number>) => {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
};

/** Adds ledgers of several processes into one view (pure; the inputs are not changed). */
export function mergeSnapshots(own: TelemetrySnapshot, others: TelemetrySnapshot[]): TelemetrySnapshot {
  if (others.length === 0) return own;
  const out = structuredClone(own);
  for (const o of others) {
    if (o.windowStartedAt < out.windowStartedAt) out.windowStartedAt = o.windowStartedAt;
    if (o.updatedAt > out.updatedAt) out.updatedAt = o.updatedAt;
    out.observedRequests += o.observedRequests;
    out.presence.namedBotHits += o.presence.namedBotHits;
    out.presence.baitHits += o.presence.baitHits;
    out.recent = [...out.recent, ...o.recent].sort((a, b) => a.at.localeCompare(b.at)).slice(-RECENT);
    for (const f of Object.values(o.families)) {
      const row = out.families[f.family];
      if (!row) {
        out.families[f.family] = structuredClone(f);
        continue;
      }
      for (const k of ['requests', 'baitHits', 'deepHits', 'robotsFetches', 'violations', 'convertReads', 'oaths', 'messages', 'verified', 'unverified'] as const) row[k] += f[k];
      for (const k of ['paths', 'status', 'hosts', 'hourly'] as const) addMaps(row[k], f[k]);
      if (f.firstSeen < row.firstSeen) row.firstSeen = f.firstSeen;
      if (f.lastSeen > row.lastSeen) row.lastSeen = f.lastSeen;
    }
  }
  return out;
}
