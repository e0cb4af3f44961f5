import crawlers from 'crawler-user-agents';
import { isbot } from 'isbot';
import { LRUCache } from 'lru-cache';
import type { BotFamily, VerifyMethod } from '../schemas/bot-families.ts';
import { lowerTokens, productTokens, type Tokens } from './tokens.ts';

/** What the gateway knows of a User-Agent. */
export interface Classification {
  bot: boolean;
  /** The family it claims, when it names one. */
  family: string | null;
  class: BotFamily['class'] | 'Cosplay' | null;
  /** The curated family entry, when the family comes from our table. */
  known: BotFamily | null;
  /** How a claim of this family can be checked. */
  verify: VerifyMethod;
}

/**
 * Only this many leading characters of a User-Agent are read and cached, cut back to the last
 * space so no token is read half, and without trailing separators (every family token of our
 * fixtures sits inside them).
 */
export const UA_PREFIX_CHARS = 256;

/** The part of a User-Agent that is classified and cached. */
export function uaPrefix(userAgent: string): string {
  if (userAgent.length <= UA_PREFIX_CHARS) return userAgent;
  const head = userAgent.slice(0, UA_PREFIX_CHARS);
  const space = head.lastIndexOf(' ');
  // Trailing separators too: isbot reads "...; b0s;" at the very end as a bot's signature.
  return copied((space > UA_PREFIX_CHARS / 2 ? head.slice(0, space) : head).replace(/[\s;,(]+$/, ''));
}
/**
 * A string of its own: V8 makes a slice a view that keeps its whole parent alive, so a cached
 * 256-character prefix of an 8 KB User-Agent held all 8 KB (test/hostile/user-agents.test.ts).
 * Slicing a concatenation flattens it into a new string first.
 */
const copied = (s: string) => ` ${s}`.slice(1);
/** The classification cache holds at most this many bytes of keys and answers. */
export const CLASSIFY_CACHE_BYTES = 4 * 1024 * 1024;

const HUMAN: Classification = Object.freeze({ bot: false, family: null, class: null, known: null, verify: 'none' });
const UNNAMED: Classification = Object.freeze({ bot: true, family: 'unnamed bot', class: 'Bot', known: null, verify: 'none' });

/** A request that names a family of our table (by User-Agent or by a Web Bot Auth signature). */
export const classificationOf = (known: BotFamily): Classification => ({
  bot: true,
  family: known.family,
  // A robots.txt-only token is never sent by its operator: whoever sends it is spoofing.
  class: known.robots_only ? 'Cosplay' : known.class,
  known,
  verify: known.verify,
});

/** Phrases (one or more lowercase words) indexed by their first word, longest first. */
type PhraseIndex<T> = Map<string, { words: string[]; value: T }[]>;

function phraseIndex<T>(entries: [string, T][]): PhraseIndex<T> {
  const index: PhraseIndex<T> = new Map();
  for (const [phrase, value] of entries) {
    const words = productTokens(phrase).lower;
    if (words.length === 0) continue;
    const list = index.get(words[0]!) ?? [];
    list.push({ words, value });
    list.sort((a, b) => b.words.length - a.words.length);
    index.set(words[0]!, list);
  }
  return index;
}

/** A token written with a trailing * ("Pingdom.com_bot_version_*") matches tokens starting so; kept apart, as a short list. */
function prefixList<T>(entries: [string, T][]): [string, T][] {
  return entries.filter(([t]) => t.endsWith('*')).map(([t, v]) => [t.slice(0, -1).toLowerCase(), v]);
}

/** The entry whose phrase starts at token i, if any. */
function phraseAt<T>(index: PhraseIndex<T>, lower: string[], i: number, prefixes: [string, T][] = []): T | undefined {
  const candidates = index.get(lower[i]!);
  if (!candidates) {
    for (const [p, v] of prefixes) if (lower[i]!.startsWith(p)) return v;
    return undefined;
  }
  for (const c of candidates) {
    let ok = i + c.words.length <= lower.length;
    for (let k = 1; ok && k < c.words.length; k++) ok = lower[i + k] === c.words[k];
    if (ok) return c.value;
  }
  return undefined;
}

// Tokens that name a bot in crawler-user-agents: for each entry, the product token of its own
// example User-Agents that its pattern matches. Names then come from the User-Agent as sent,
// never from regex source.
const NOT_NAMES = new Set(['firefox', 'opera', 'edg', 'edge', 'msie', 'trident', 'presto', 'crios', 'fxios', 'samsungbrowser', 'mozilla', 'compatible', 'applewebkit', 'khtml', 'like', 'gecko', 'chrome', 'safari', 'version', 'mobile', 'linux', 'android', 'windows', 'macintosh', 'iphone', 'http:', 'https:', 'u', 'en', 'en-us', 'x11', 'win64', 'x64', 'nt', 'intel', 'mac', 'os', 'x', 'cpu', 'build', 'bot', 'crawler', 'spider', 'robot', 'the', 'a', 'for', 'and', 'of', 'http', 'www']);
// Tokens of bots crawler-user-agents tags "search-engine": a search engine's indexer is a Crawler
// by function. (Its "ai-crawler" tag mixes training, search and assistants, so it sets no class.)
const SEARCH_TOKENS = new Set<string>();
const FALLBACK_TOKENS: Set<string> = (() => {
  const names = new Set<string>();
  for (const c of crawlers) {
    const search = ((c as { tags?: string[] }).tags ?? []).includes('search-engine');
    const regex = new RegExp(c.pattern, 'i');
    for (const instance of c.instances ?? []) {
      const m = regex.exec(instance);
      if (!m) continue;
      const t = productTokens(instance);
      const at = t.starts.findLastIndex((s) => s <= m.index);
      const token = t.lower[at];
      if (!token || NOT_NAMES.has(token) || token.length < 2 || /^[\d.]+$/.test(token)) continue;
      names.add(token);
      if (search) SEARCH_TOKENS.add(token);
    }
  }
  return names;
})();

/** Product tokens that usually name a bot when nothing else does. */
const BOTLIKE = /bot|crawl|spider|fetch|scan|agent|archiv|index|preview|monitor|check|scrap|slurp|harvest|http|client|lib|request|curl|wget/i;

/** Words before a token that make it a comparison, not a claim: "like TwitterBot", "compatible with Googlebot". */
const NOT_A_CLAIM = new Set(['like', 'with', 'following']);
/** Words that name a bot only together with the word before them ("Speedy Spider"). */
const GENERIC_NAMES = new Set(['spider', 'bot', 'crawler', 'robot']);

/** Words that end a multi-word name ("FAST Enterprise Crawler 6 used by ..."). */
const NAME_STOP = new Set([...[...NOT_NAMES].filter((w) => !GENERIC_NAMES.has(w)), 'for', 'by', 'used', 'on', 'with', 'from', 'at', 'to', 'in', 'or', 'see', 'please', 'is']);

/**
 * The name starting at token i, with the words that follow it after a single space while none has
 * a version ("Xenu Link Sleuth/1.3", "netEstate NE Crawler"): at most 4 words, ending after a
 * generic word such as Crawler.
 */
function nameAt(t: Tokens, ua: string, i: number): string {
  let name = t.original[i]!;
  let j = i;
  while (j - i < 3 && !GENERIC_NAMES.has(t.lower[j]!)) {
    const end = t.starts[j]! + t.original[j]!.length;
    const next = t.original[j + 1];
    if (next === undefined || ua.charCodeAt(end) !== 32 || t.starts[j + 1] !== end + 1 || !/^[A-Za-z]/.test(next) || /^v\d/i.test(next) || NAME_STOP.has(t.lower[j + 1]!)) break;
    name += ` ${next}`;
    j++;
  }
  return name;
}

/** The name an unknown bot gives itself: the first token crawler-user-agents knows, else the first bot-like token. */
function nameOf(t: Tokens, ua: string, skip: (lower: string) => boolean = () => false): string | null {
  for (let i = 0; i < t.lower.length; i++) {
    if (!FALLBACK_TOKENS.has(t.lower[i]!) || skip(t.lower[i]!)) continue;
    return nameAt(t, ua, i);
  }
  for (let i = 1; i < t.lower.length; i++) if (GENERIC_NAMES.has(t.lower[i]!) && !NOT_NAMES.has(t.lower[i - 1]!) && !skip(t.lower[i - 1]!)) return `${t.original[i - 1]} ${t.original[i]}`;
  for (let i = 0; i < t.lower.length; i++) {
    const lower = t.lower[i]!;
    if (!skip(lower) && !NOT_NAMES.has(lower) && lower.length > 2 && BOTLIKE.test(lower) && !lower.includes('.') && !lower.includes('@') && !lower.includes(':')) return nameAt(t, ua, i);
  }
  return null;
}

/**
 * Classifies a User-Agent in one pass over its product tokens (a hash lookup per token, phrases
 * checked only where their first word matches): our table first, then people's own clients that
 * heuristics mistake for bots, then isbot for yes or no, then a name from the User-Agent's own
 * tokens. Only the first UA_PREFIX_CHARS characters are read; answers are cached by that prefix in
 * an LRU bounded in bytes.
 */
export function createClassifier(families: BotFamily[], humanClients: Record<string, string[]> = {}, cacheBytes = CLASSIFY_CACHE_BYTES) {
  const familyTokens = families.flatMap((f) => f.tokens.map((t): [string, Classification] => [t, classificationOf(f)]));
  const byPhrase = phraseIndex(familyTokens.filter(([t]) => !t.endsWith('*')));
  const familyPrefixes = prefixList(familyTokens);
  const humanTokens = Object.values(humanClients).flatMap((tokens) => tokens.map((t): [string, true] => [t, true]));
  const humanPrefixes = prefixList(humanTokens);
  // Tools (curl, Java, HeadlessChrome) and generic words (Spider) name a family only when nothing
  // more specific does: "yacybot (...; java 1.6)" is yacybot, "PHP-Curl-Class ... curl/7" is PHP-Curl-Class.
  const weakTokens = new Set(families.filter((f) => f.kind === 'tool' || f.weak).flatMap((f) => f.tokens.map((t) => t.toLowerCase())));
  const isWeak = (c: Classification) => c.known !== null && (c.known.kind === 'tool' || c.known.weak);
  const humans = phraseIndex(humanTokens.filter(([t]) => !t.endsWith('*')));
  const cache = new LRUCache<string, Classification>({ maxSize: cacheBytes, sizeCalculation: (_v, key) => 2 * key.length + 96 });

  function uncached(ua: string): Classification {
    const lower = lowerTokens(ua);
    let human = false;
    let weak: Classification | undefined;
    for (let i = 0; i < lower.length; i++) {
      // "TelegramBot (like TwitterBot)": a token after "like" is a comparison, not a claim.
      if (i > 0 && NOT_A_CLAIM.has(lower[i - 1]!)) continue;
      const known = phraseAt(byPhrase, lower, i, familyPrefixes);
      if (known && !isWeak(known)) return known;
      weak ??= known;
      human ||= phraseAt(humans, lower, i, humanPrefixes) !== undefined;
    }
    if (weak) {
      const name = nameOf(productTokens(ua), ua, (token) => weakTokens.has(token));
      return name ? { bot: true, family: name, class: 'Bot', known: null, verify: 'none' } : weak;
    }
    if (human || ua === '' || !isbot(ua)) return HUMAN;
    const name = nameOf(productTokens(ua), ua);
    if (!name) return UNNAMED;
    return { bot: true, family: name, class: SEARCH_TOKENS.has(name.split(' ')[0]!.toLowerCase()) ? 'Crawler' : 'Bot', known: null, verify: 'none' };
  }

  return function classify(userAgent: string): Classification {
    const key = uaPrefix(userAgent);
    const hit = cache.get(key);
    if (hit) return hit;
    const result = uncached(key);
    cache.set(key, result);
    return result;
  };
}
export type Classifier = ReturnType<typeof createClassifier>;
