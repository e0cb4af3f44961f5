import crawlers from 'crawler-user-agents';
import { isbot } from 'isbot';
import { LRUCache } from 'lru-cache';
import type { BotFamily } from '../schemas/bot-families.ts';

/** What the gateway knows of a User-Agent. */
export interface Classification {
  bot: boolean;
  /** The family it claims, when it names one. */
  family: string | null;
  class: BotFamily['class'] | null;
  /** The curated family entry, when the family comes from our table. */
  known: BotFamily | null;
}

const HUMAN: Classification = { bot: false, family: null, class: null, known: null };

/** A request that names a family of our table (by User-Agent or by a Web Bot Auth signature). */
export const classificationOf = (known: BotFamily): Classification => ({ bot: true, family: known.family, class: known.class, known });

/** Product tokens of a User-Agent: `Mozilla/5.0 (compatible; GPTBot/1.2; +url)` → mozilla, compatible, gptbot, ... */
export function productTokens(userAgent: string): string[] {
  return userAgent
    .split(/[\s;()]+/)
    .map((part) => part.split('/')[0]!.toLowerCase())
    .filter((t) => t !== '' && !t.startsWith('+'));
}

// crawler-user-agents patterns, compiled once, with a readable family name from each pattern.
const ALL_FALLBACK = crawlers.map((c) => ({
  regex: new RegExp(c.pattern, 'i'),
  family: c.pattern.replace(/\\(.)/g, '$1').replace(/[\^$[\]()|?*+{}]/g, '').replace(/\/$/, '').slice(0, 60) || 'bot',
  eater: ((c as { tags?: string[] }).tags ?? []).includes('ai-crawler'),
}));

/**
 * Classifies a User-Agent once, cached per distinct string in a bounded LRU: our curated table by
 * whole product tokens (so Claude-User is not ClaudeBot), then isbot for yes or no, then
 * crawler-user-agents to name what the table lacks.
 */
export function createClassifier(families: BotFamily[], cacheSize = 10_000) {
  const byToken = new Map<string, BotFamily>();
  for (const f of families) for (const t of f.tokens) byToken.set(t.toLowerCase(), f);
  // Families the table knows are matched by whole tokens only; a substring pattern would take
  // look-alikes (NotGPTBot) for them.
  const FALLBACK = ALL_FALLBACK.filter((f) => !byToken.has(f.family.toLowerCase()));
  // A Map refreshed by delete and set costs ~10 µs a hit once it is large; lru-cache costs well under 1.
  const cache = new LRUCache<string, Classification>({ max: cacheSize });

  function uncached(userAgent: string): Classification {
    for (const token of productTokens(userAgent)) {
      const known = byToken.get(token);
      if (known) return classificationOf(known);
    }
    if (userAgent === '' || !isbot(userAgent)) return HUMAN;
    const match = FALLBACK.find((f) => f.regex.test(userAgent));
    return { bot: true, family: match?.family ?? 'unnamed bot', class: match?.eater ? 'Eater' : 'Bot', known: null };
  }

  return function classify(userAgent: string): Classification {
    const hit = cache.get(userAgent);
    if (hit) return hit;
    const result = uncached(userAgent);
    cache.set(userAgent, result);
    return result;
  };
}
export type Classifier = ReturnType<typeof createClassifier>;
