import { LRUCache } from 'lru-cache';
import type { BotFamily } from '../schemas/bot-families.ts';

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

/**
 * Verifies each (family, address) once, in the background, and remembers the answer in a bounded
 * cache. `lookup` answers at once from the cache or returns null while a check is under way.
 */
export function createVerifier(resolver: Resolver, onResult: (family: string, ipKey: string, verdict: Verdict) => void, cacheSize = 10_000) {
  const cache = new LRUCache<string, Verdict>({ max: cacheSize });
  const pending = new Set<string>();
  return {
    lookup(family: BotFamily, ip: string, ipKey: string): Verdict | null {
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
