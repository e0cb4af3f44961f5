import type { BotFamilies, BotFamily, GeneratedBotFamily } from '../../schemas/bot-families.ts';
import { productTokens, type Tokens } from './tokens.ts';

// From the lists the field keeps (Matomo device-detector's bots.yml, crawler-user-agents) to rows
// of our token table: pure, so `npm run refresh-bot-families` and the test that the shipped table is
// what it makes run the same code. Names always come from the strings bots send, never from regex
// source: a pattern is expanded to the literal names it matches, or read off its example UAs.

/** A bot of Matomo device-detector's list, as its npm port ships it. */
export interface DeviceDetectorBot {
  regex: string;
  name: string;
  category?: string;
  producer?: { name?: string };
}
/** An entry of crawler-user-agents. */
export interface CrawlerUserAgent {
  pattern: string;
  instances?: string[];
  tags?: string[];
}

/** At most this many literal names are taken from one pattern; a pattern with more is left out. */
const MAX_EXPANSIONS = 64;
const WILD = '\u0000';
/** Marks a name a wildcard cut short of text the pattern still requires. */
const CUT = '\u0001';

/**
 * The literal strings a pattern matches, when it is a pattern of names: literals, escapes,
 * alternations, groups, `?`, and small character classes are expanded; lookarounds and anchors are
 * dropped; a wildcard (`.*`, `\d`, `+`...) ends the name there (and is skipped at the start). Null
 * when the pattern has no such reading.
 */
export function expandPattern(pattern: string): string[] | null {
  let i = 0;
  const fail = () => {
    throw new Error('not a pattern of names');
  };
  // A sequence's expansions: strings, where WILD marks "anything from here".
  function alternation(): string[] {
    const out = [...sequence()];
    while (pattern[i] === '|') {
      i++;
      out.push(...sequence());
    }
    return out;
  }
  function sequence(): string[] {
    let acc = [''];
    while (i < pattern.length && pattern[i] !== '|' && pattern[i] !== ')') {
      let atom = single();
      const q = pattern[i];
      if (q === '?' && pattern[i + 1] !== '?') {
        i++;
        atom = [...atom, ''];
      } else if (q === '*' || q === '+' || q === '{') {
        if (q === '{') i = pattern.indexOf('}', i) + 1 || fail();
        else i++;
        if (pattern[i] === '?') i++;
        atom = [WILD];
      }
      // A leading wildcard leaves the rest to be read (".*masscan"); after a name, more required
      // text makes the name incomplete ("Baidu.*spider" is not "Baidu").
      const required = !atom.includes('');
      acc = acc.flatMap((a) => {
        if (a === '' && atom.length === 1 && atom[0] === WILD) return [''];
        if (a.endsWith(WILD) || a.endsWith(CUT)) return required && !a.endsWith(CUT) ? [a + CUT] : [a];
        return atom.map((b) => a + b);
      });
      if (acc.length > MAX_EXPANSIONS) fail();
    }
    return acc;
  }
  function single(): string[] {
    const c = pattern[i++]!;
    if (c === '(') {
      let look = false;
      if (pattern[i] === '?') {
        const kind = pattern.slice(i, i + 3);
        if (kind.startsWith('?:')) i += 2;
        else if (kind === '?<!' || kind === '?<=') ((i += 3), (look = true));
        else if (kind.startsWith('?!') || kind.startsWith('?=')) ((i += 2), (look = true));
        else fail();
      }
      const inner = alternation();
      if (pattern[i++] !== ')') fail();
      return look ? [''] : inner;
    }
    if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) fail();
      const body = pattern.slice(i, end).replace(/\\(.)/g, '$1');
      i = end + 1;
      // Small classes of separators or letters read as alternatives; ranges, negations and digits as a wildcard.
      if (body.startsWith('^') || /[a-z0-9]-[a-z0-9]/i.test(body) || body.length > 6) return [WILD];
      return [...body];
    }
    if (c === '\\') {
      const e = pattern[i++]!;
      if (/[dDwWsSbB]/.test(e)) return e === 'b' || e === 'B' ? [''] : [WILD];
      return [e];
    }
    if (c === '.') return [WILD];
    if (c === '^' || c === '$') return [''];
    return [c];
  }
  try {
    const all = alternation();
    if (i !== pattern.length) return null;
    const names = all.filter((s) => !s.includes(CUT)).map((s) => s.split(WILD)[0]!.trim());
    return [...new Set(names.filter((s) => s !== ''))];
  } catch {
    return null;
  }
}

/** Words of platforms, engines and browsers: never a name, and they end a name of several words. */
export const PLATFORM_WORDS = new Set([
  'firefox',
  'opera',
  'edg',
  'edge',
  'msie',
  'trident',
  'presto',
  'crios',
  'fxios',
  'samsungbrowser',
  'mozilla',
  'compatible',
  'applewebkit',
  'khtml',
  'like',
  'gecko',
  'chrome',
  'safari',
  'version',
  'mobile',
  'linux',
  'android',
  'windows',
  'macintosh',
  'iphone',
  'http:',
  'https:',
  'u',
  'en',
  'en-us',
  'x11',
  'win64',
  'x64',
  'nt',
  'intel',
  'mac',
  'os',
  'x',
  'cpu',
  'build',
  'bot',
  'crawler',
  'spider',
  'robot',
  'the',
  'a',
  'for',
  'and',
  'of',
  'http',
  'www',
]);
/** Words that are never a bot's name by themselves: platform words, vendors, languages and generic words. */
export const NOT_NAMES = new Set([
  ...PLATFORM_WORDS,
  'ipad',
  'google',
  'yandex',
  'apple',
  'microsoft',
  'amazon',
  'facebook',
  'samsung',
  'huawei',
  'xiaomi',
  'www.google.com',
  'com',
  'net',
  'org',
  'java',
  'python',
  'php',
  'ruby',
  'perl',
  'go',
  'node',
  'curl',
  'wget',
  'apache',
  'search',
  'monitor',
  'checker',
  'check',
  'agent',
  'client',
  'fetcher',
  'preview',
  'proxy',
  'scanner',
  'service',
  'tool',
  'test',
  'app',
  'browser',
  'media',
  'news',
  'feed',
  'reader',
  'user',
  'web',
  'site',
  'online',
  'link',
  // A sentence's words and a mailbox spelled out ("If our bot caused problems", "bot[at]example").
  'our',
  'your',
  'my',
  'this',
  'is',
  'if',
  'in',
  'we',
  'us',
  'at',
  'dot',
]);

/** Matomo's categories, by our kind and class. */
function kindOf(category: string | undefined): Pick<GeneratedBotFamily, 'kind' | 'class'> {
  switch (category) {
    case 'Search bot':
    case 'Security search bot':
      return { kind: 'search', class: 'Crawler' };
    case 'AI Search Crawler':
      return { kind: 'ai-search', class: 'Crawler' };
    case 'AI Assistant':
    case 'AI Agent':
      return { kind: 'ai-assistant', class: 'Intelligence' };
    case 'AI Data Scraper':
      return { kind: 'ai-training', class: 'Eater' };
    case 'Feed Fetcher':
    case 'Feed Reader':
    case 'Feed Parser':
    case 'Read-it-later Service':
      return { kind: 'feed', class: 'Bot' };
    case 'Site Monitor':
    case 'Network Monitor':
    case 'Benchmark':
      return { kind: 'monitor', class: 'Bot' };
    case 'Social Media Agent':
      return { kind: 'preview', class: 'Bot' };
    default:
      return { kind: 'other', class: 'Bot' };
  }
}

/** A name as a table token: trimmed of the separators a pattern keeps around it. */
function tokenOf(literal: string): string | null {
  const t = literal.replace(/^[\s;,(]+|[\s;,(/]+$/g, '').replace(/\s+/g, ' ');
  const words = productTokens(t);
  // Every word must be one product token as the classifier splits it, and not all generic.
  if (words.original.length === 0 || words.original.join(' ') !== t) return null;
  if (words.lower.every((w) => NOT_NAMES.has(w) || w.length < 2 || /^[\d.]+$/.test(w))) return null;
  if (t.length > 64 || /^https?:/i.test(t)) return null;
  return t;
}

const squash = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/** Claims on tokens and names, curated first: a later list never takes what an earlier one holds. */
class Claims {
  tokens = new Set<string>();
  names = new Set<string>();
  /** Curated tokens written with a trailing * ("Pingdom.com_bot_version*") hold every token they start. */
  prefixes: string[] = [];
  constructor(curated: BotFamilies) {
    const hold = (t: string) =>
      t.endsWith('*') ? this.prefixes.push(t.slice(0, -1).toLowerCase()) : this.tokens.add(t.toLowerCase());
    for (const f of curated.families) {
      this.names.add(f.family.toLowerCase());
      f.tokens.forEach(hold);
    }
    for (const list of Object.values(curated.human_clients)) list.forEach(hold);
  }
  /** Whether a list has claimed this token already. */
  has(token: string): boolean {
    const t = token.toLowerCase();
    return this.tokens.has(t) || this.prefixes.some((p) => t.startsWith(p));
  }
  /** The tokens still free, claimed now. */
  take(tokens: string[]): string[] {
    const free = tokens.filter(
      (t) => !this.tokens.has(t.toLowerCase()) && !this.prefixes.some((p) => t.toLowerCase().startsWith(p)),
    );
    for (const t of free) this.tokens.add(t.toLowerCase());
    return free;
  }
  /** A family name not yet used: the preferred one, else the first token, else either with its operator's name. */
  name(preferred: string, tokens: string[], operator?: string): string {
    const owned = operator === undefined || operator === 'unknown' ? [] : [`${preferred} (${operator})`];
    for (const n of [preferred, ...tokens, ...owned]) {
      if (n.length <= 64 && !this.names.has(n.toLowerCase())) {
        this.names.add(n.toLowerCase());
        return n;
      }
    }
    const n = `${tokens[0]} (${this.names.size})`;
    this.names.add(n.toLowerCase());
    return n;
  }
}

/**
 * A version glued to a name ("grub-client-2.6.1", "TwengaBot-2.0", "Seeker v.1", "larbin2.6.3",
 * "linkCheckV3.0"), with its pre-release tag ("DirBuster-1.0-RC1", "v2.1.0-dev"): one family,
 * whatever its version. A bare number is not taken for one ("IVW-Crawler-6476133", "XyzBot-12").
 */
export const GLUED_NAME_VERSION =
  /(?:[-_ ]v\.?\d[\d.]*|(?:[-_ ]|(?<=[a-z]{2})v?)\d+\.\d[\d.]*)(?:[-_.]?(?:rc|beta|alpha|dev|pre)\d*)?$/i;
/** What a sentence leaves after a name: a colon, a dash, a full stop, a "v." whose number is a token of its own ("SSL-Crawler:", "Qirina Hurdler v."). */
export const TRAILING = /(?:\s+v\.|[\s:.-])+$/i;
/** A name without a glued version or what a sentence leaves after it; unchanged where less than 3 characters would be left. */
export const bareName = (name: string): string => {
  // Both patterns end where the name ends, and V8 tries them at every character: a name whose last
  // character is a letter no version or tag ends with (rc, beta, alpha, dev, pre), as most are
  // ("RotatingCrawler"), is left as it is without asking them.
  const last = name.charCodeAt(name.length - 1) | 32;
  if (last >= 97 && last <= 122 && last !== 97 && last !== 99 && last !== 101 && last !== 118) return name; // a c e v
  const head = name.replace(GLUED_NAME_VERSION, '').replace(TRAILING, '');
  return head.length >= 3 ? head : name;
};

/** Most product tokens a pattern's match is read as one name across ("Dow Jones Searchbot"). */
const MAX_NAME_WORDS = 4;

/**
 * The name a crawler pattern matches in its example: the product token at the match's start and
 * the words after it, one space (or an apostrophe) apart, that the match covers: "Dow Jones
 * Searchbot" and "Let's Encrypt", not their first words, which name nothing alone ("Dow", and "Let"
 * in "please let us know"). A version, a comment or another delimiter ends the name.
 */
function namedSpan(instance: string, t: Tokens, at: number, end: number): string {
  let last = at;
  while (
    last + 1 < t.original.length &&
    last + 1 - at < MAX_NAME_WORDS &&
    t.starts[last + 1]! < end &&
    t.starts[last + 1] === t.starts[last]! + t.original[last]!.length + 1 &&
    " '".includes(instance[t.starts[last + 1]! - 1]!) &&
    /^[a-z0-9]/i.test(t.original[last + 1]!)
  )
    last++;
  return instance.slice(t.starts[at], t.starts[last]! + t.original[last]!.length);
}

/** Whether the classifier reads a token by its head, a name before - _ or . ("msnbot-media" by msnbot). */
const readByHead = (token: string, head: string) =>
  token.length > head.length &&
  token.toLowerCase().startsWith(head.toLowerCase()) &&
  '-_.'.includes(token[head.length]!);

/**
 * The generated rows: device-detector's bots, each pattern expanded to the names it matches (names
 * that differ only in case and separators are one family), then crawler-user-agents, each entry by
 * the name its pattern matches in its own example User-Agents (namedSpan). Curated tokens, human client
 * tokens and names are never taken.
 */
export function generatedFamilies(
  curated: BotFamilies,
  deviceDetector: DeviceDetectorBot[],
  crawlers: CrawlerUserAgent[],
): GeneratedBotFamily[] {
  const claims = new Claims(curated);
  const out: GeneratedBotFamily[] = [];
  for (const bot of deviceDetector) {
    const literals = expandPattern(bot.regex);
    if (!literals) continue;
    const groups = new Map<string, string[]>();
    for (const l of literals) {
      const t = tokenOf(l);
      if (t) groups.set(squash(t), [...(groups.get(squash(t)) ?? []), t]);
    }
    for (const variants of groups.values()) {
      const tokens = claims.take([...new Set(variants)]);
      if (tokens.length === 0) continue;
      const preferred = groups.size === 1 && !bot.name.includes('$') ? bot.name : tokens[0]!;
      // One pattern for many of an operator's bots (Matomo's "Googlebot" matches Google-Ads-Qualify
      // too): its category holds for the bot it is named after, the others are just bots.
      const own = groups.size === 1 || bot.name.includes('$') || squash(tokens[0]!).includes(squash(bot.name));
      out.push({
        family: claims.name(preferred, tokens, bot.producer?.name?.trim() || undefined),
        operator: bot.producer?.name?.trim() || (bot.name.includes('$') ? 'unknown' : bot.name),
        tokens,
        ...(own ? kindOf(bot.category) : kindOf(undefined)),
        source: 'device-detector',
      });
    }
  }
  for (const c of crawlers) {
    const search = (c.tags ?? []).includes('search-engine');
    const regex = new RegExp(c.pattern, 'i');
    const tokens: string[] = [];
    for (const instance of c.instances ?? []) {
      const m = regex.exec(instance);
      if (!m) continue;
      const t = productTokens(instance);
      const at = t.starts.findLastIndex((s) => s <= m.index);
      const token = at < 0 ? undefined : namedSpan(instance, t, at, m.index + m[0].length);
      if (
        !token ||
        NOT_NAMES.has(token.toLowerCase()) ||
        token.length < 3 ||
        /^[\d.]+$/.test(token) ||
        token.startsWith('http')
      )
        continue;
      if (!tokens.some((x) => x.toLowerCase() === token.toLowerCase())) tokens.push(token);
    }
    // An entry whose own name a row holds already is that row's bot, whatever its examples add: a
    // generated row takes the new tokens ("psbot-image" joins Picsearch's psbot); a curated row needs
    // none the classifier reads by their head ("msnbot-media" is Bingbot's, not a family named after
    // "librabot", which msnbot's address in its example matched).
    const own = expandPattern(c.pattern)
      ?.map(tokenOf)
      .find((t) => t !== null && claims.has(t));
    const owner = own ? out.find((f) => f.tokens.some((t) => t.toLowerCase() === own.toLowerCase())) : undefined;
    let free = claims.take(tokens);
    if (own && owner) {
      owner.tokens.push(...free);
      continue;
    }
    if (own) free = free.filter((t) => !readByHead(t, own));
    if (free.length === 0) continue;
    // The same bot as a family of device-detector's, by name or token, whatever version its example
    // gives ("Disqus", "IAS Crawler", "yoozBot-2.2"): its tokens join that row, which knows the
    // operator, rather than making "Disqus (1382)" or a second yoozBot.
    const name = bareName(free[0]!);
    const same = out.find(
      (f) =>
        f.family.toLowerCase() === name.toLowerCase() || f.tokens.some((t) => t.toLowerCase() === name.toLowerCase()),
    );
    if (same) {
      same.tokens.push(...free);
      continue;
    }
    out.push({
      family: claims.name(name, free),
      operator: 'unknown',
      tokens: free,
      kind: search ? 'search' : 'other',
      class: search ? 'Crawler' : 'Bot',
      source: 'crawler-user-agents',
    });
  }
  return out;
}

/** A generated row as a family of the classifier's table (nothing of it can be verified). */
export const asFamily = (g: GeneratedBotFamily): BotFamily => ({
  ...g,
  verify: 'none',
  weak: false,
  robots_only: false,
});
