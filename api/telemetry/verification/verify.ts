import { Resolver as DnsResolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import type { BotFamily, BotIpRanges } from '../../schemas/bot-families.ts';
import { unmapped, v6Groups } from '../../net/address.ts';
import { addressRanges, networkOf, siteOf, type AddressRanges } from './address-ranges.ts';

/** The DNS lookups verification needs (node:dns/promises fits; tests pass recorded answers). */
export interface Resolver {
  /** The address's PTR names: one query. */
  reverse(ip: string): Promise<string[]>;
  /** The host's addresses: an A and an AAAA query. */
  resolve(host: string): Promise<string[]>;
}

/** The name a PTR query for an address asks (RFC 1035 3.5 in-addr.arpa, RFC 3596 ip6.arpa). */
export function reverseName(ip: string): string {
  const address = unmapped(ip);
  if (isIP(address) === 4) return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
  const nibbles = v6Groups(address)
    .map((g) => g.toString(16).padStart(4, '0'))
    .join('');
  return `${[...nibbles].reverse().join('.')}.ip6.arpa`;
}

// The answers that say a name has no such record; any other error (a timeout, a server failure)
// says nothing of the name.
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * The resolver the server uses: c-ares queries (PTR, A and AAAA), one try of 2 s each, to
 * `servers` (DNS_SERVERS: `ip`, `ip:port`, `[ipv6]:port`) or, without them, the system's
 * (/etc/resolv.conf). Not dns.lookup: getaddrinfo runs on libuv's 4 threadpool threads, which file
 * I/O (the journal) shares, and could not be pointed at other servers. Not dns.reverse either: it
 * reports a query never answered, or a resolver refusing, as ENOTFOUND, the answer "no such name",
 * which counted as a spoof; resolvePtr keeps ETIMEOUT and ECONNREFUSED apart.
 */
export function systemResolver(servers?: readonly string[]): Resolver {
  const dns = new DnsResolver({ timeout: 2000, tries: 1 });
  if (servers?.length) dns.setServers([...servers]);
  const none = (error: { code?: string }) => (NO_RECORD.has(error.code ?? '') ? [] : Promise.reject(error));
  return {
    reverse: (ip) => dns.resolvePtr(reverseName(ip)),
    // Both asked at once: every resolve() sends its two queries, as counted.
    resolve: async (host) =>
      (await Promise.all([dns.resolve4(host).catch(none), dns.resolve6(host).catch(none)])).flat(),
  };
}

/**
 * What checking one claim found: verified (the operator's list or DNS says yes), failed (it says
 * no), unverifiable (nothing to check against, or the check could not run).
 */
export type Outcome = 'verified' | 'failed' | 'unverifiable';

/** Reverse-DNS lookups in flight at most, process-wide; one of them a site (siteOf) at a time. */
export const RDNS_MAX_IN_FLIGHT = 16;
/** How long a DNS answer is trusted. */
export const RDNS_SUCCESS_TTL_MS = 24 * 3_600_000;
export const RDNS_FAILURE_TTL_MS = 3_600_000;
/**
 * Failed lookups a network (/24 or /64) may have for one family within RDNS_FAILURE_TTL_MS before
 * its other addresses' claims are counted failed, not looked up: a client rotating addresses costs
 * this many lookups a network an hour and its claims show as spoofed, not as the crawler's. One
 * spoofer's failure never fails its neighbour; a crawler's address verified before keeps its answer.
 */
export const RDNS_NETWORK_FAILURES = 5;
/**
 * Lookups of a site (siteOf: /24, or /48 for IPv6) that may go unanswered (timed out, a server
 * failure or refusal) within RDNS_UNANSWERED_TTL_MS of the first; past them its claims are not
 * looked up until that time is out. A site whose reverse zone drops queries held a slot 2 s a
 * lookup; a genuine crawler's reverse DNS answers. Such claims count unverifiable (silence proves
 * no spoof, and our resolver may be the one down), never failed.
 */
export const RDNS_SITE_UNANSWERED = 2;
export const RDNS_UNANSWERED_TTL_MS = 15 * 60_000;
/** Names of one PTR answer under the family's suffixes that are confirmed forward, at most. */
export const RDNS_NAMES_CHECKED = 3;
/** Entries in each verification cache (addresses, failed networks, silent sites). */
export const RDNS_CACHE_ENTRIES = 10_000;

const TRANSIENT = new Set([
  'ETIMEOUT',
  'ESERVFAIL',
  'ECONNREFUSED',
  'EREFUSED',
  'ECANCELLED',
  'ETIMEDOUT',
  'EAI_AGAIN',
]);

/**
 * Reverse DNS with forward confirmation, as Google, Bing, Apple and others document: the address's
 * PTR name must end in one of the operator's suffixes, and that name must resolve back to the
 * address. A name outside the suffixes or no PTR record fails; a timeout or server failure leaves
 * the claim unverifiable. Pure apart from the resolver; bounded in time, and in queries: the first
 * RDNS_NAMES_CHECKED distinct names under the suffixes are confirmed, the others not read (a PTR
 * answer of 60 such names made 121 queries).
 */
export async function verifyByDns(
  family: BotFamily,
  ip: string,
  resolver: Resolver,
  timeoutMs = 2000,
): Promise<Outcome> {
  const suffixes = family.rdns ?? [];
  if (suffixes.length === 0) return 'unverifiable';
  const address = unmapped(ip);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' })), timeoutMs);
    timer.unref();
  });
  try {
    const names = await Promise.race([resolver.reverse(address), timeout]);
    const checked = new Set<string>();
    for (const name of names) {
      const host = name.toLowerCase().replace(/\.$/, '');
      if (checked.has(host) || !suffixes.some((s) => host.endsWith(s))) continue;
      if (checked.size === RDNS_NAMES_CHECKED) break;
      checked.add(host);
      const forward = await Promise.race([resolver.resolve(host), timeout]);
      if (forward.map(unmapped).includes(address)) return 'verified';
    }
    return 'failed';
  } catch (error) {
    return TRANSIENT.has((error as { code?: string }).code ?? '') ? 'unverifiable' : 'failed';
  } finally {
    clearTimeout(timer);
  }
}

/** Each family's published addresses (the union of every list naming it); families without any are absent. */
export function rangesOf(ranges: BotIpRanges): Map<string, AddressRanges> {
  const prefixes = new Map<string, string[]>();
  for (const list of Object.values(ranges.lists)) {
    for (const family of list.families) prefixes.set(family, [...(prefixes.get(family) ?? []), ...list.prefixes]);
  }
  const out = new Map<string, AddressRanges>();
  for (const [family, list] of prefixes) if (list.length > 0) out.set(family, addressRanges(list));
  return out;
}

/** Why a claim that could be checked by reverse DNS was not looked up (it counts unverifiable). */
export type Unchecked = 'busy' | 'site_busy' | 'site_unanswered';

/**
 * Reverse DNS since the process began: lookups started, DNS queries asked (a lookup's PTR, an A and
 * an AAAA for each name confirmed), and requests whose claim was not looked up, by why.
 */
export interface VerifierStats {
  lookups: number;
  queries: number;
  unchecked: Record<Unchecked, number>;
}

export interface VerifierOptions {
  resolver: Resolver;
  /** Called when a lookup that `lookup` left pending (null) is answered. */
  onResult: (family: string, ipKey: string, outcome: Outcome) => void;
  ranges?: Map<string, AddressRanges>;
  maxInFlight?: number;
  cacheEntries?: number;
}

/**
 * Verifies claims by address. Published ranges decide first and at once. Reverse DNS runs in the
 * background with at most `maxInFlight` lookups process-wide and one per site (siteOf: /24, or /48
 * for IPv6) at a time, so no holder of one network takes more than one slot; answers are cached by
 * address. Failures are also counted by network (/24 or /64) and family: after
 * RDNS_NETWORK_FAILURES in an hour its other addresses are not looked up, so a client rotating its
 * addresses inside one network causes a few lookups, not one per request. A failure is only ever its
 * own address's: a spoofer in a crawler's network leaves the crawler verified, or at worst
 * unverifiable. A site whose lookups go unanswered RDNS_SITE_UNANSWERED times is not looked up for
 * RDNS_UNANSWERED_TTL_MS. A claim that would need a lookup past those caps is counted unverifiable
 * rather than queued, and counted by why (`stats().unchecked`).
 */
export function createVerifier(o: VerifierOptions) {
  const ranges = o.ranges ?? new Map<string, AddressRanges>();
  const maxInFlight = o.maxInFlight ?? RDNS_MAX_IN_FLIGHT;
  const entries = o.cacheEntries ?? RDNS_CACHE_ENTRIES;
  const byAddress = new LRUCache<string, Outcome>({ max: entries, ttl: RDNS_SUCCESS_TTL_MS });
  // Network key → failed lookups since its first failure (the hour runs from that one).
  const failedNetworks = new LRUCache<string, number>({ max: entries, ttl: RDNS_FAILURE_TTL_MS });
  // Site → unanswered lookups since the first (whatever the family: the PTR query is the same).
  const silentSites = new LRUCache<string, number>({ max: entries, ttl: RDNS_UNANSWERED_TTL_MS });
  // Site → the family and address whose lookup is under way: one a site, whatever the family, so
  // one address claiming sixteen families, or one /48's sixteen /64s, cannot take every slot.
  const inFlight = new Map<string, string>();
  let lookups = 0;
  let queries = 0;
  const unchecked: Record<Unchecked, number> = { busy: 0, site_busy: 0, site_unanswered: 0 };
  const skip = (why: Unchecked, requests: number): Outcome => ((unchecked[why] += requests), 'unverifiable');
  // Every query the resolver is asked to send, counted as it is asked.
  const resolver: Resolver = {
    reverse: (ip) => ((queries += 1), o.resolver.reverse(ip)),
    resolve: (host) => ((queries += 2), o.resolver.resolve(host)),
  };

  return {
    /** True when a claim of the family can be checked by address (published ranges or documented host names). */
    canVerify: (family: BotFamily) => ranges.has(family.family) || (family.rdns?.length ?? 0) > 0,
    /** Lookups started since the process began (tests and benchmarks read it). */
    lookups: () => lookups,
    inFlight: () => inFlight.size,
    /** Lookups, queries and unchecked requests since the process began (metrics read them). */
    stats: (): VerifierStats => ({ lookups, queries, unchecked: { ...unchecked } }),
    /**
     * The outcome now, or null while a lookup for this very address is under way (onResult follows).
     * `requests`: how many requests the claim stands for (a log batch's group), as counted unchecked.
     */
    lookup(family: BotFamily, ip: string, ipKey: string, requests = 1): Outcome | null {
      const list = ranges.get(family.family);
      if (list?.has(ip)) return 'verified';
      // Outside the list: where the operator also documents host names, DNS decides (lists lag);
      // otherwise the list is the operator's word and the claim fails.
      if (!family.rdns?.length) return list ? 'failed' : 'unverifiable';
      const address = unmapped(ip);
      const key = `${family.family}\n${address}`;
      const known = byAddress.get(key);
      if (known) return known;
      const net = networkOf(address);
      const network = `${family.family}\n${net}`;
      if ((failedNetworks.get(network) ?? 0) >= RDNS_NETWORK_FAILURES) return 'failed';
      const site = siteOf(address);
      if ((silentSites.get(site) ?? 0) >= RDNS_SITE_UNANSWERED) return skip('site_unanswered', requests);
      const pending = inFlight.get(site);
      if (pending !== undefined) return pending === key ? null : skip('site_busy', requests);
      if (inFlight.size >= maxInFlight) return skip('busy', requests);
      inFlight.set(site, key);
      lookups++;
      void verifyByDns(family, address, resolver).then((outcome) => {
        inFlight.delete(site);
        if (outcome !== 'unverifiable') byAddress.set(key, outcome);
        if (outcome === 'failed')
          failedNetworks.set(network, (failedNetworks.get(network) ?? 0) + 1, { noUpdateTTL: true });
        if (outcome === 'unverifiable') silentSites.set(site, (silentSites.get(site) ?? 0) + 1, { noUpdateTTL: true });
        o.onResult(family.family, ipKey, outcome);
      });
      return null;
    },
  };
}
export type Verifier = ReturnType<typeof createVerifier>;
