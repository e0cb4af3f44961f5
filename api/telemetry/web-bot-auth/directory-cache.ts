import CachePolicy from 'http-cache-semantics';
import { LRUCache } from 'lru-cache';
import type { DirectoryFetcher, DirectoryResponse } from './directory-fetch.ts';
import {
  acceptableMediaType,
  acceptFor,
  cimdKeys,
  DirectoryError,
  keySetOf,
  type DirectoryKey,
  type KeySet,
} from './key-directory.ts';
import type { AgentMember } from './signature-agent.ts';

/** Directories remembered at most (least recently used leave first). */
export const DIRECTORY_CACHE_ENTRIES = 256;
/** Fetches under way at most, over all directories; past it a lookup answers from what it has. */
export const DIRECTORY_FETCHES_IN_FLIGHT = 8;
/** A directory's freshness, from its Cache-Control or Expires (RFC 9111), is held within these bounds. */
export const DIRECTORY_MIN_TTL_MS = 60_000;
export const DIRECTORY_MAX_TTL_MS = 24 * 3_600_000;
/** Freshness of a directory that says nothing about caching. */
export const DIRECTORY_DEFAULT_TTL_MS = 3_600_000;
/** After a failed fetch, no new one for 30 s, doubling with each failure in a row, never past 5 minutes (the draft's bound on negative caching). */
export const NEGATIVE_TTL_FIRST_MS = 30_000;
export const NEGATIVE_TTL_MAX_MS = 5 * 60_000;
/** A keyid the directory does not list makes us fetch it again (a key may have rotated in), at most this often. */
export const UNKNOWN_KEY_REFETCH_MS = 60_000;
/**
 * Fetches a minute of one directory that clients can cause: first fetches, retries and fetches for
 * an unknown keyid. Each directory has its own budget, so no other signer's traffic spends it.
 * Refreshing a directory we hold keys of is not counted: its freshness bounds it.
 */
export const DIRECTORY_FETCHES_PER_MINUTE = 30;

/** One directory fetch, as it is logged and counted: the URL, and the status or `error`. */
export interface DirectoryFetchRecord {
  url: string;
  status: number | 'error';
}

/** What the directory of a member says of one keyid. */
export type KeyLookup =
  | { status: 'key'; key: DirectoryKey }
  /** A directory we hold fresh does not list it. */
  | { status: 'absent' }
  /** No directory could be had (never fetched, failing, or past our bounds), or only a stale one that lacks the key. */
  | { status: 'unavailable' };

interface Entry {
  keys: KeySet | null;
  /** Of the last good answer, for a conditional refresh (If-None-Match, If-Modified-Since); null when it cannot be revalidated. */
  policy: CachePolicy | null;
  confirmedAt: number;
  freshUntil: number;
  /** A refresh starts in the background from here on, ahead of freshUntil (jittered, so verifiers do not refetch together). */
  refreshAt: number;
  /** No fetch before this (negative caching and back-off). */
  retryAt: number;
  failures: number;
  inFlight: Promise<void> | null;
  /** This directory's fetch budget: when its minute began and the budgeted fetches in it. */
  windowStart: number;
  windowFetches: number;
}

export interface DirectoryCacheOptions {
  fetch: DirectoryFetcher;
  /** Milliseconds; Date.now by default. */
  now?: () => number;
  random?: () => number;
  maxEntries?: number;
  maxInFlight?: number;
  fetchesPerMinute?: number;
  /** Only the draft's test vectors set this: known test keys are otherwise left out of every directory. */
  allowTestKeys?: boolean;
  /** Told of every fetch once it has its answer. */
  onFetch?: ((fetch: DirectoryFetchRecord) => void) | undefined;
}

const clamp = (ms: number, min: number, max: number) => Math.min(max, Math.max(min, ms));

/** Retry-After in milliseconds (delay-seconds or an HTTP date), 0 when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number): number {
  if (!value) return 0;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}

/** How long an answer is fresh: its own RFC 9111 freshness lifetime less its age, within our bounds; an hour when it says nothing. */
export function freshnessMs(policy: CachePolicy): number {
  const headers = policy.responseHeaders();
  const explicit = headers['cache-control'] !== undefined || headers.expires !== undefined;
  return clamp(
    explicit ? (policy.maxAge() - policy.age()) * 1000 : DIRECTORY_DEFAULT_TTL_MS,
    DIRECTORY_MIN_TTL_MS,
    DIRECTORY_MAX_TTL_MS,
  );
}

const flat = (headers: CachePolicy.Headers): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]])),
  );

const asPolicyResponse = (res: DirectoryResponse) => ({ status: res.status, headers: res.headers });

function jsonOf(res: DirectoryResponse, member: Pick<AgentMember, 'type'>): unknown {
  if (res.status !== 200) throw new DirectoryError(`answered ${res.status}`);
  if (!acceptableMediaType(member.type, res.headers['content-type']))
    throw new DirectoryError(`served as ${res.headers['content-type'] ?? 'nothing'}`);
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new DirectoryError('not JSON');
  }
}

/**
 * The key directories of signature agents, cached as RFC 9111 says (freshness from Cache-Control or
 * Expires, conditional refresh with the validators), refreshed in the background before they go
 * stale, one fetch at a time per directory however many requests wait on it. A failed fetch is
 * remembered for at most five minutes and never evicts keys we hold: an agent's outage does not
 * revoke its keys. Keys are looked up by (directory, keyid).
 */
export function createDirectoryCache(o: DirectoryCacheOptions) {
  const now = o.now ?? Date.now;
  const random = o.random ?? Math.random;
  const maxInFlight = o.maxInFlight ?? DIRECTORY_FETCHES_IN_FLIGHT;
  const entries = new LRUCache<string, Entry>({ max: o.maxEntries ?? DIRECTORY_CACHE_ENTRIES });
  const fetchesPerMinute = o.fetchesPerMinute ?? DIRECTORY_FETCHES_PER_MINUTE;
  let inFlight = 0;
  let fetches = 0;
  function takeBudget(entry: Entry): boolean {
    const at = now();
    if (at - entry.windowStart >= 60_000) {
      entry.windowStart = at;
      entry.windowFetches = 0;
    }
    if (entry.windowFetches >= fetchesPerMinute) return false;
    entry.windowFetches++;
    return true;
  }

  function confirm(entry: Entry, keys: KeySet, policy: CachePolicy | null, ttlMs: number, at: number): void {
    Object.assign(entry, {
      keys,
      policy,
      confirmedAt: at,
      freshUntil: at + ttlMs,
      refreshAt: at + ttlMs * (0.75 + 0.15 * random()),
      retryAt: 0,
      failures: 0,
    });
  }

  function fail(entry: Entry, at: number, retryAfter: number): void {
    entry.failures++;
    const backoff =
      Math.min(NEGATIVE_TTL_MAX_MS, NEGATIVE_TTL_FIRST_MS * 2 ** (entry.failures - 1)) * (0.8 + 0.2 * random());
    entry.retryAt = at + Math.min(NEGATIVE_TTL_MAX_MS, Math.max(backoff, retryAfter));
  }

  async function get(url: string, headers: Record<string, string>): Promise<DirectoryResponse> {
    fetches++;
    try {
      const res = await o.fetch(url, headers);
      o.onFetch?.({ url, status: res.status });
      return res;
    } catch (error) {
      o.onFetch?.({ url, status: 'error' });
      throw error;
    }
  }

  /** Fetches a member's keys into its entry; never throws. */
  async function load(member: AgentMember, entry: Entry): Promise<void> {
    const at = now();
    const request = { url: member.fetchUrl, method: 'GET', headers: { accept: acceptFor(member.type) } };
    let res: DirectoryResponse | undefined;
    try {
      res = await get(
        member.fetchUrl,
        entry.policy && entry.keys ? flat(entry.policy.revalidationHeaders(request)) : request.headers,
      );
      if (res.status === 304 && entry.policy && entry.keys) {
        const { policy } = entry.policy.revalidatedPolicy(request, asPolicyResponse(res));
        return confirm(entry, entry.keys, policy, freshnessMs(policy), at);
      }
      const document = jsonOf(res, member);
      const policy = new CachePolicy(request, asPolicyResponse(res), { shared: false });
      if (member.type !== 'cimd') {
        const keys = await keySetOf(document, {
          kidIsThumbprint: member.type === 'directory',
          allowTestKeys: o.allowTestKeys,
        });
        return confirm(entry, keys, policy, freshnessMs(policy), at);
      }
      const where = cimdKeys(document, member.fetchUrl);
      if ('jwks' in where)
        return confirm(
          entry,
          await keySetOf(where.jwks, { kidIsThumbprint: false, allowTestKeys: o.allowTestKeys }),
          policy,
          freshnessMs(policy),
          at,
        );
      // The document points elsewhere: both are fetched whole each time, fresh as long as the shorter-lived.
      const jwksRequest = { url: where.jwksUri, method: 'GET', headers: { accept: acceptFor('jwks_uri') } };
      res = await get(where.jwksUri, jwksRequest.headers);
      const keys = await keySetOf(jsonOf(res, { type: 'jwks_uri' }), {
        kidIsThumbprint: false,
        allowTestKeys: o.allowTestKeys,
      });
      const ttl = Math.min(
        freshnessMs(policy),
        freshnessMs(new CachePolicy(jwksRequest, asPolicyResponse(res), { shared: false })),
      );
      confirm(entry, keys, null, ttl, at);
    } catch {
      fail(entry, at, retryAfterMs(res?.headers['retry-after'], at));
    }
  }

  /** One fetch per directory at a time; none past the bound on fetches under way, nor past the minute's budget unless it refreshes keys we hold. */
  function refresh(member: AgentMember, entry: Entry, budgeted: boolean): Promise<void> {
    if (entry.inFlight) return entry.inFlight;
    if (inFlight >= maxInFlight || (budgeted && !takeBudget(entry))) return Promise.resolve();
    inFlight++;
    entry.inFlight = load(member, entry).finally(() => {
      inFlight--;
      entry.inFlight = null;
    });
    return entry.inFlight;
  }

  function entryOf(member: AgentMember): Entry {
    const id = `${member.type} ${member.fetchUrl}`;
    let entry = entries.get(id);
    if (!entry)
      entries.set(
        id,
        (entry = {
          keys: null,
          policy: null,
          confirmedAt: 0,
          freshUntil: 0,
          refreshAt: 0,
          retryAt: 0,
          failures: 0,
          inFlight: null,
          windowStart: -Infinity,
          windowFetches: 0,
        }),
      );
    return entry;
  }

  return {
    /** What the member's directory says of `keyid`, fetching it when we have none fresh (and may). */
    async lookup(member: AgentMember, keyid: string): Promise<KeyLookup> {
      const entry = entryOf(member);
      const at = now();
      if (entry.keys && at < entry.freshUntil) {
        if (at >= entry.refreshAt && at >= entry.retryAt) void refresh(member, entry, false);
      } else if (at >= entry.retryAt) {
        await refresh(member, entry, entry.keys === null);
      }
      if (
        entry.keys &&
        !entry.keys.keys.has(keyid) &&
        now() - entry.confirmedAt >= UNKNOWN_KEY_REFETCH_MS &&
        now() >= entry.retryAt
      )
        await refresh(member, entry, true);
      const key = entry.keys?.keys.get(keyid);
      if (key) return { status: 'key', key };
      return entry.keys && now() < entry.freshUntil ? { status: 'absent' } : { status: 'unavailable' };
    },
    /** Fetches started so far (a cimd document and the JWK Set it points to count as two). */
    fetches: () => fetches,
    /** Fetches under way now. */
    inFlight: () => inFlight,
  };
}
export type DirectoryCache = ReturnType<typeof createDirectoryCache>;
