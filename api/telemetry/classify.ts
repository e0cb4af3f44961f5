import type { BotFamily } from '../schemas/bot-families.ts';

/** Product tokens of a User-Agent: `Mozilla/5.0 (compatible; GPTBot/1.2; +url)` → Mozilla, compatible, GPTBot, ... */
export function productTokens(userAgent: string): string[] {
  return userAgent
    .split(/[\s;()]+/)
    .map((part) => part.split('/')[0]!.toLowerCase())
    .filter((t) => t !== '' && !t.startsWith('+'));
}

/**
 * Names the family of a User-Agent by whole product tokens (so Claude-User is not ClaudeBot),
 * cached per distinct string in a bounded LRU.
 */
export function createClassifier(families: BotFamily[], cacheSize = 10_000) {
  const byToken = new Map<string, BotFamily>();
  for (const f of families) for (const t of f.tokens) byToken.set(t.toLowerCase(), f);
  const cache = new Map<string, BotFamily | null>();

  return function classify(userAgent: string): BotFamily | null {
    const hit = cache.get(userAgent);
    if (hit !== undefined) {
      // Refresh its place: a Map iterates in insertion order, so the first key is the oldest.
      cache.delete(userAgent);
      cache.set(userAgent, hit);
      return hit;
    }
    let found: BotFamily | null = null;
    for (const token of productTokens(userAgent)) {
      found = byToken.get(token) ?? null;
      if (found) break;
    }
    if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
    cache.set(userAgent, found);
    return found;
  };
}
export type Classifier = ReturnType<typeof createClassifier>;
