import type { ObservedRequest } from '../gateway/gateway.ts';
import type { Classifier } from './classify.ts';

export interface SpeciesPresence {
  family: string;
  class: string;
  hits: number;
  baitHits: number;
  lastSeen: string;
}

/**
 * Presence (spec 1): named bot User-Agent hits and bait-path hits, counted in memory since the
 * process started. The persisted bot ledger is separate.
 */
export function createPresence(classify: Classifier, baitPaths: string[]) {
  const species = new Map<string, SpeciesPresence>();
  let namedBotHits = 0;
  let baitHits = 0;
  const isBait = (path: string) => baitPaths.some((b) => path === b || path.startsWith(b.endsWith('/') ? b : `${b}/`));

  return {
    observe(r: ObservedRequest): void {
      const family = classify(r.userAgent);
      const bait = isBait(r.path);
      if (bait) baitHits++;
      if (family) namedBotHits++;
      if (!family && !bait) return;
      const name = family?.family ?? 'unnamed';
      const row = species.get(name) ?? { family: name, class: family?.class ?? 'Cosplay', hits: 0, baitHits: 0, lastSeen: '' };
      row.hits++;
      if (bait) row.baitHits++;
      row.lastSeen = new Date().toISOString();
      species.set(name, row);
    },
    snapshot() {
      return { total: namedBotHits + baitHits, namedBotHits, baitHits, species: [...species.values()] };
    },
  };
}
export type Presence = ReturnType<typeof createPresence>;
