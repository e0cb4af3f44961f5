import { BlockList, isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import type { BotFamily, BotIpRanges } from '../schemas/bot-families.ts';

/** The DNS lookups verification needs (node:dns/promises fits; tests pass recorded answers). */
export interface Resolver {
  reverse(ip: string): Promise<string[]>;
  resolve(host: string): Promise<string[]>;
}

export type Verdict = 'verified' | 'unverified';

/**
 * Reverse DNS with forward confirmation, as Google, Bing, Apple and others document: the address's
 * PTR name must end in one of the operator's suffixes, and that name must resolve back to the
 * address. Pure apart from the resolver; bounded in time.
 */
export async function verifyByDns(family: BotFamily, ip: string, resolver: Resolver, timeoutMs = 2000): Promise<Verdict> {
  const suffixes = family.rdns ?? [];
  if (suffixes.length === 0) return 'unverified';
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref());
  try {
    const names = await Promise.race([resolver.reverse(ip), timeout]);
    for (const name of names) {
      const host = name.toLowerCase().replace(/\.$/, '');
      if (!suffixes.some((s) => host.endsWith(s))) continue;
      const forward = await Promise.race([resolver.resolve(host), timeout]);
      if (forward.includes(ip)) return 'verified';
    }
  } catch {
    // No PTR record, a lookup failure or a timeout: the claim stays unproven.
  }
  return 'unverified';
}

/** Address ranges per family, as node's BlockList (IPv4 and IPv6). */
export function rangesOf(ranges: BotIpRanges): Map<string, BlockList> {
  const lists = new Map<string, BlockList>();
  for (const [family, { prefixes }] of Object.entries(ranges.families)) {
    if (prefixes.length === 0) continue;
    const list = new BlockList();
    for (const prefix of prefixes) {
      const [net, bits] = prefix.split('/') as [string, string];
      list.addSubnet(net, Number(bits), isIP(net) === 6 ? 'ipv6' : 'ipv4');
    }
    lists.set(family, list);
  }
  return lists;
}

/** Verification by the operator's published ranges: an address inside them is verified. */
export function verifyByRanges(list: BlockList, ip: string): Verdict {
  const plain = ip.replace(/^::ffff:/, '');
  const kind = isIP(plain);
  return kind !== 0 && list.check(plain, kind === 6 ? 'ipv6' : 'ipv4') ? 'verified' : 'unverified';
}

/**
 * Verifies each (family, address) once, in the background, and remembers the answer in a bounded
 * cache. `lookup` answers at once from the cache or returns null while a check is under way.
 */
export function createVerifier(resolver: Resolver, onResult: (family: string, ipKey: string, verdict: Verdict) => void, ranges = new Map<string, BlockList>(), cacheSize = 10_000) {
  const cache = new LRUCache<string, Verdict>({ max: cacheSize });
  const pending = new Set<string>();
  return {
    /** True when the family can be verified at all (published ranges or documented host names). */
    canVerify: (family: BotFamily) => ranges.has(family.family) || (family.rdns?.length ?? 0) > 0,
    lookup(family: BotFamily, ip: string, ipKey: string): Verdict | null {
      // An address in the published ranges is verified at once; outside them (the lists can lag),
      // reverse DNS decides where the operator documents it.
      const list = ranges.get(family.family);
      if (list && verifyByRanges(list, ip) === 'verified') return 'verified';
      if (!family.rdns?.length) return 'unverified';
      const key = `${family.family}\n${ip}`;
      const known = cache.get(key);
      if (known) return known;
      if (!pending.has(key)) {
        pending.add(key);
        void verifyByDns(family, ip, resolver).then((verdict) => {
          pending.delete(key);
          cache.set(key, verdict);
          onResult(family.family, ipKey, verdict);
        });
      }
      return null;
    },
  };
}
