import { nameKeys } from '../../names/name-rule.ts';
import { isbot, isbotAtStart, isbotByWord, isbotWordAt, ISBOT_ANYWHERE } from './isbot-split.ts';
import { ATTACK_MARKERS, carriesAttackPayload } from './attack-payload.ts';
import { indexedAlternation } from './literal-index.ts';
import { LRUCache } from 'lru-cache';
import type { BotFamily, GeneratedBotFamily, VerifyMethod } from '../../schemas/bot-families.ts';
import { asFamily, bareName, NOT_NAMES, PLATFORM_WORDS } from './bot-lists.ts';
import {
  createPersonClientCheck,
  isPersonClientName,
  GENERIC_BOT_WORDS,
  isPersonDevice,
  leadingLibrary,
  namesLibrary,
  type PersonClientCheck,
  withoutGluedVersion,
} from './person-client.ts';
import { createTokenTable, type TokenTable } from './token-table.ts';
import {
  lowerTokens,
  productTokens,
  tokenCount,
  tokenCut,
  tokenEnd,
  tokenHashAt,
  tokenScan,
  tokenStart,
  tokenTexts,
  type Tokens,
} from './tokens.ts';

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
  /** The operator's own traffic (a health probe, this project's CLIs): named, never counted as a bot. */
  operator?: true;
  /** A client no list names and nothing shows to be a bot (an unknown product token alone): counted apart, never as a bot. */
  unknown?: true;
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

/** No bot: a person's browser or app. */
export const HUMAN: Classification = Object.freeze({
  bot: false,
  family: null,
  class: null,
  known: null,
  verify: 'none',
});
/** An unknown client: a product token no list names, with no evidence of a bot (no bot word, address or tool). */
export const UNKNOWN_CLIENT: Classification = Object.freeze({
  bot: false,
  family: null,
  class: null,
  known: null,
  verify: 'none',
  unknown: true,
});
/** A bot outside our table, named after what the string says (its product, a library, its address). */
const botNamed = (family: string): Classification => ({
  bot: true,
  family: bareName(family),
  class: 'Bot',
  known: null,
  verify: 'none',
});
const UNNAMED: Classification = Object.freeze(botNamed('unnamed bot'));
/** A scanner that carries an attack's payload in its User-Agent, whatever browser the string also names. */
const ATTACK_PROBE: Classification = Object.freeze(botNamed('attack probe'));

/** A request that names a family of our table (by User-Agent or by a Web Bot Auth signature). */
export const classificationOf = (known: BotFamily): Classification =>
  known.kind === 'operator'
    ? { bot: false, family: known.family, class: null, known, verify: 'none', operator: true }
    : {
        bot: true,
        family: known.family,
        // A robots.txt-only token is never sent by its operator: whoever sends it is spoofing.
        class: known.robots_only ? 'Cosplay' : known.class,
        known,
        verify: known.verify,
      };

/** How much a table's word is worth: ours over the lists', a maintained list over a list of examples. */
const Tier = {
  Curated: 0,
  /** A generic word or tool of ours: a family only when nothing more specific names one. */
  Weak: 1,
  /** Matomo device-detector's list: maintained, names bots only. */
  Listed: 2,
  /** crawler-user-agents' example tokens: a heuristic, checked against the client parser. */
  Example: 3,
} as const;
type Tier = (typeof Tier)[keyof typeof Tier];
interface Entry {
  c: Classification;
  tier: Tier;
  /** device-detector's "Generic Bot" words (Desktop, ...): a heuristic, never a name appended to a browser's string. */
  generic?: true;
  /**
   * A weak token that names an agent, not a tool ("Spider", "Code"), as the agent writes it: a
   * common word names the agent only so spelled ("Fluffy the spider", "spider/1.0" are the word).
   */
  spelled?: string;
  /** A list's entry: its family's name, lowercase (withItsWords compares it with the token, for each string the entry names). */
  name?: string;
}

/** Phrases (one or more lowercase words) indexed by their first word, longest first. */
type Phrases<T> = { words: string[]; value: T }[];
type PhraseIndex<T> = Map<string, Phrases<T>>;

function phraseIndex<T>(entries: [string, T][]): PhraseIndex<T> {
  const index: PhraseIndex<T> = new Map();
  for (const [phrase, value] of entries) {
    const words = productTokens(phrase).lower;
    if (words.length === 0) continue;
    const list = index.get(words[0]!) ?? [];
    if (list.some((c) => c.words.join(' ') === words.join(' '))) continue;
    list.push({ words, value });
    list.sort((a, b) => b.words.length - a.words.length);
    index.set(words[0]!, list);
  }
  return index;
}

/** A token written with a trailing * ("Pingdom.com_bot_version_*") matches tokens starting so; kept apart, as a short list. */
type Prefixes<T> = { prefix: string; value: T }[];
function prefixList<T>(entries: [string, T][]): Prefixes<T> {
  return entries
    .filter(([t]) => t.endsWith('*'))
    .map(([t, value]) => ({ prefix: t.slice(0, -1).toLowerCase(), value }));
}

/** Whether one of the prefixes occurs in the text at all: most strings hold none, and their tokens are compared with none. */
const holdsAny = (prefixes: Prefixes<unknown>, text: string) => prefixes.some(({ prefix }) => text.includes(prefix));

/** Whether token j of a string (as tokenScan found them) is the word. */
const isToken = (text: string, tokens: number[], j: number, word: string) =>
  tokenEnd(tokens, j) - tokenStart(tokens, j) === word.length && text.startsWith(word, tokenStart(tokens, j));

/** The entry whose phrase starts at token i (its first word's candidates given), if any, and how many words it spans. */
function phraseAt<T>(
  candidates: Phrases<T>,
  text: string,
  tokens: number[],
  i: number,
): { value: T; words: number } | undefined {
  for (const c of candidates) {
    let ok = i + c.words.length <= tokenCount(tokens);
    for (let k = 1; ok && k < c.words.length; k++) ok = isToken(text, tokens, i + k, c.words[k]!);
    if (ok) return { value: c.value, words: c.words.length };
  }
  return undefined;
}

/** The entry of the first prefix the token text[start, end) starts with, if any. */
function prefixAt<T>(
  prefixes: Prefixes<T>,
  text: string,
  start: number,
  end: number,
): { value: T; words: 1 } | undefined {
  for (const { prefix, value } of prefixes)
    if (prefix.length <= end - start && text.startsWith(prefix, start)) return { value, words: 1 };
  return undefined;
}

/**
 * What a word says as a token: the phrases of our families and of people's clients it starts, the
 * entry it names as the head of a longer token, and whether it makes the next token a comparison.
 * One lookup per token for all four (a lookup per token and table was 13% of classifying a
 * browser's string).
 */
interface TokenInfo<F, H> {
  family: Phrases<F> | undefined;
  human: Phrases<H> | undefined;
  single: F | undefined;
  notAClaim: boolean;
}

function tokenInfos<F, H>(
  families: PhraseIndex<F>,
  humans: PhraseIndex<H>,
  single: Map<string, F>,
  notAClaim: Set<string>,
): TokenTable<TokenInfo<F, H>> {
  const infos = new Map<string, TokenInfo<F, H>>();
  for (const word of [...families.keys(), ...humans.keys(), ...single.keys(), ...notAClaim])
    // Every field set, in one order: one object shape, so that reading a field stays one load.
    infos.set(word, {
      family: families.get(word),
      human: humans.get(word),
      single: single.get(word),
      notAClaim: notAClaim.has(word),
    });
  return createTokenTable(infos);
}

/**
 * A name followed by a suffix of its own ("Dataprovider.com", "AdsBot-Google-Mobile-Apps",
 * "Googlebot-Mobile"): the longest head of the token starting at start, cut at - _ or . (the last
 * such cut given, -1 when none), that names a family.
 */
function headAt<F>(table: TokenTable<TokenInfo<F, unknown>>, text: string, start: number, last: number): F | undefined {
  for (let cut = last; cut > start + 1; cut--) {
    const ch = text.charCodeAt(cut);
    if (ch !== 45 && ch !== 95 && ch !== 46) continue;
    const hit = table.get(text, start, cut)?.single;
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** Product tokens that usually name a bot when nothing else does. */
const BOTLIKE =
  /bot|crawl|spider|fetch|scan|agent|archiv|index|preview|monitor|check|scrap|slurp|harvest|http|client|lib|request|curl|wget|uptime|screenshot|thumb|validat|extract/i;
/** Words that show a program, though no name is made of them (a bot's spellings, SEO tools). */
const EVIDENCE_ONLY = /b0t|spyder|^seo$/i;
/** Words of a program's work that isbot's list lacks ("CopperEgg/RevealUptime", "Webthumb", "SiteGuardian (Internet Monitoring)"). */
const WORK_WORDS =
  String.raw`uptime monitor screenshot thumb validat extract downloader webhook hookshot test(?:er|ing)?(?![a-z])
    sitemap rank(?![a-z]) resolver expander tracer unshorten cacher resizer preload perf(?:ormance)?(?![a-z])
    summari[sz]er watchdog fuzz embedder pipeline middleware loader generator search\s?engine
    link\s?(?:check|valet|alarm|analy)`.split(/\s+/);
const WORK_WORD = indexedAlternation(WORK_WORDS);
/**
 * isbot's unanchored patterns, the work words and an attack's markers in one index: every person's
 * string passes the gate that asks them all, and one scan of it costs less than one each (the
 * scans were a third of a browser's classification).
 */
const MAY_BE_BOT = indexedAlternation([...ISBOT_ANYWHERE, ...WORK_WORDS, ...ATTACK_MARKERS]);
/**
 * "API" and "SEO" as words of their own or a name's last capitals ("NeutrinoAPI", "HEADMasterSEO"),
 * not inside one ("tpapi", "Enseo"), nor an Android API level ("with API 31" in an app's string).
 */
const SERVICE_WORD = /\b(?:api|API)\b(?! ?\d)|\b(?:seo|SEO)\b|[a-z](?:API|SEO)\b/;
/** Words of work in an app's own name that make it a tool, not a person's app ("URLTester", "Email Extractor"). */
const APP_AT_WORK = /extract|test(?:er|ing)?(?![a-z])|check|monitor|validat/i;
/** A program's own name first: a Perl or Ruby module ("LWP::Simple/5.800", "WWW::Document/0.02") or a Windows executable ("xpymep.exe"). */
const PROGRAM_NAME = /^[a-z][\w-]*::|^[\w-]+\.exe\b/i;
/** A language runtime's own token: the string is a program's ("nyawc/1.8.1 CPython/3.6.5 Linux/3.10.0"). */
const RUNTIME =
  /\b(?:CPython|PyPy|Jython|IronPython|Ruby|Perl|Deno|Bun|OpenJDK)\/\d|\bPHP\/\d|\bnode(?:\.js)?\/v?\d|Go-http-client|\bgo1\.\d/i;
/** A service's word or a program's own name: what shows work besides the indexed work words. */
const namesWork = (ua: string) => SERVICE_WORD.test(ua) || PROGRAM_NAME.test(ua);
/** A word of a program's work, a service's word, or a program's own name. */
export const showsWork = (ua: string) => WORK_WORD(ua) || namesWork(ua);
/** isbot(ua) || showsWork(ua) || an attack's marker, with one scan of the string where the three would make three. */
// The scan first: a bot's string ends it at its bot word, and isbot's anchored patterns cost as much
// again on a "Mozilla/5.0 (compatible; ..." string that none of them takes.
export const mayBeBot = (ua: string) => (ua !== '' && MAY_BE_BOT(ua)) || isbotAtStart(ua) || namesWork(ua);
/** Of those, the words no app or device is named with: a name with one is a bot's without asking the client parser. */
const SURELY_BOT = /bot|crawl|spider|slurp|scrap|harvest|archiv/i;

/** A program named a player, first in its string ("BSPlayer/2", "GnomeMplayer/1.0.7"): a person's media player. */
const MEDIA_PLAYER = /^[a-z][\w-]*player[\d._-]*$/i;
/** Words before a token that make it a comparison, not a claim: "like TwitterBot", "compatible with Googlebot". */
const NOT_A_CLAIM = new Set(['like', 'with', 'following']);
/** Words that name a bot only together with the word before them ("Speedy Spider"). */
const GENERIC_NAMES = new Set(['spider', 'bot', 'crawler', 'robot']);

// The RegExps of the uncached path, as module constants: a literal in a function is a new RegExp
// object each time it runs.
const STARTS_WITH_LETTER = /^[a-z]/i;
const STARTS_AS_WORD = /^[a-z0-9]/i;
/** What follows a name but is none of its words: a mailbox, a host, an id ("binlar_2.6.3 binlar@example.mail", "Collector d4408643ccbd7e83"). */
const NOT_A_WORD = /@|^www\.|^[\da-f]{12,}$|^.{25}/i;
const VERSION_WORD = /^v(?:\.?\d|\.$)/i;
const NUMBERISH = /^[\d.x_-]+$/;
const COMPATIBLE = /compatible/i;
const BROWSER_STRING = /^(mozilla|opera)\//i;
/** BROWSER_STRING's answer without a RegExp on the common path (every string asks it). */
const startsAsBrowser = (ua: string) => {
  const c = ua.charCodeAt(0) | 32;
  return (c === 109 || c === 111) && BROWSER_STRING.test(ua); // m, o
};
const ADDRESS_HOST = /https?:\/\/(?:www\.)?([a-z0-9.-]+\.[a-z]{2,})/i;
/**
 * A contact's domain ("noc@stumbleupon.com"), or a domain written bare ("www.alertra.com",
 * "+feeder.co"); its ending is checked apart (HOST_ENDING), so no label is tried twice.
 */
const MAIL_HOST = /[\w.+-]@([a-z0-9-]+(?:\.[a-z0-9-]+)+)/gi;
const BARE_HOST = /(?:^|[\s;(+])(?:www\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)+)/gi;
const HOST_ENDING = /\.(?:com|net|org|io|co|info|biz|de|fr|uk|ru|jp|cn|in|nl|it|es|eu)$/i;
/** A public mailbox's domain names its provider, not the bot. */
const PUBLIC_MAIL =
  /^(?:gmail|googlemail|hotmail|outlook|live|yahoo|aol|icloud|gmx|yandex|mail|qq|163|126|protonmail)\./i;
/** A name in the engine's comment: "(KHTML, like Gecko; Google Wireless Transcoder)". */
const ENGINE_COMMENT_NAME = /\(KHTML, like Gecko[;,] ([A-Za-z][\w .-]{2,40})\)/;

/** Words that end a multi-word name ("FAST Enterprise Crawler 6 used by ..."). */
const NAME_STOP = new Set([
  ...[...PLATFORM_WORDS].filter((w) => !GENERIC_NAMES.has(w)),
  'for',
  'by',
  'used',
  'on',
  'with',
  'from',
  'at',
  'to',
  'in',
  'or',
  'see',
  'please',
  'is',
]);

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
    if (
      next === undefined ||
      ua.charCodeAt(end) !== 32 ||
      t.starts[j + 1] !== end + 1 ||
      !STARTS_WITH_LETTER.test(next) ||
      VERSION_WORD.test(next) ||
      NOT_A_WORD.test(next) ||
      NAME_STOP.has(t.lower[j + 1]!)
    )
      break;
    name += ` ${next}`;
    j++;
  }
  return name;
}

/**
 * The name an unknown bot gives itself: "<Word> Spider" (no sentence's word, as in "If our bot
 * caused problems", and no version, as in "v1.3 (Spider"), else the first bot-like token.
 */
function nameOf(t: Tokens, ua: string, skip: (lower: string) => boolean = () => false): string | null {
  for (let i = 1; i < t.lower.length; i++) {
    const word = t.lower[i - 1]!;
    if (
      GENERIC_NAMES.has(t.lower[i]!) &&
      STARTS_AS_WORD.test(word) &&
      !NOT_NAMES.has(word) &&
      !VERSION_WORD.test(word) &&
      !skip(word)
    )
      return `${t.original[i - 1]} ${t.original[i]}`;
  }
  for (let i = 0; i < t.lower.length; i++) {
    const lower = t.lower[i]!;
    if (
      !skip(lower) &&
      !NOT_NAMES.has(lower) &&
      lower.length > 2 &&
      BOTLIKE.test(lower) &&
      !lower.includes('.') &&
      !lower.includes('@') &&
      !lower.includes(':')
    )
      return nameAt(t, ua, i);
  }
  return null;
}

/**
 * An address or a contact: bots sign with one, people's browsers and apps do not ("@calendar=" is a
 * locale's). A mailbox may be spelled out against harvesters: "scout at surphace dot com".
 */
const CONTACT =
  /https?:\/\/|\bwww\.|[\w.+-]@(?:[a-z0-9-]+\.[a-z]|localhost\b)|\(at\)|\[at\]|[a-z0-9]\.(?:com|net|org|io|de|ru|fr|uk|info|tech|ai)\b|\w at [a-z0-9-]+(?: d(?:ot|ash) [a-z0-9-]+)* dot [a-z]{2,}\b/;
/** A phone's or tablet's system named by an app's own string ("Jam/2.0.4 iOS/16.3.1 (www.listentojam.com)"): an app, address or not. */
const MOBILE_OS = /\b(?:ios|ipados|android|iphone|ipad)\b/i;
/**
 * A "(compatible; Name" comment after a browser's own string, in the manner of Googlebot's phone
 * crawler ("... Mobile Safari/537.36 (compatible; Googlebot/2.1; ..."): a crawler's claim, whatever
 * the string around it says. Browsers write "compatible;" only in their first comment: a browser's
 * string nested after an app's ("BrightSign/4.6.46 (XD230) Mozilla/5.0 (compatible; Linux mips)")
 * starts its own first comment after "Mozilla/", and an old MSIE string nested in another names MSIE.
 */
const CLAIM_AFTER_BROWSER = /\)[^(]*(?<!mozilla)\/[\w.+]+ +\(compatible; ?(?!msie)[a-z]/i;
/**
 * Signs as a crawler does: with an address or a contact, naming no phone's system (the cheaper test
 * first: most people's strings name one), or with a claim after a browser's string, phone or not.
 */
const signsAsBot = (ua: string) =>
  (!MOBILE_OS.test(ua) && CONTACT.test(ua)) || (ua.includes('(compatible') && CLAIM_AFTER_BROWSER.test(ua));
/** Words of browsers' own product tokens, after which an appended token is a name ("... Safari/537.36 DareBoost"). */
const BROWSER_WORDS = new Set([
  'safari',
  'chrome',
  'firefox',
  'gecko',
  'version',
  'mobile',
  'edg',
  'opr',
  'applewebkit',
  'khtml',
  'like',
  'presto',
  'trident',
]);
const plausible = (lower: string) =>
  lower.length >= 2 && !NOT_NAMES.has(lower) && !NUMBERISH.test(lower) && !lower.startsWith('+');

/** The platform comment of a browser-looking string ("(Linux; Android 9; Google TV Build/...)"), where device models are; "" when none. */
function platformText(ua: string): string {
  const m = PLATFORM.exec(ua);
  // A comment with "compatible" or an address is a bot's, not a device's.
  return m && !COMPATIBLE.test(m[1]!) && !CONTACT.test(m[1]!) ? m[1]! : '';
}
const PLATFORM = /^Mozilla\/[\d.]+ (\([^)]*)\)/;
/**
 * How many of a string's tokens sit in its platform comment: those of its scan that start before the
 * comment's ")" (a delimiter, so no token runs across it), or, with no scan, those of the text before it.
 */
const platformTokenCount = (ua: string, uaTokens: number[] | undefined) => {
  const p = platformText(ua);
  if (p === '') return 0;
  const end = ua.indexOf(p) + p.length;
  if (uaTokens === undefined) return lowerTokens(ua.slice(0, end)).length;
  let n = 0;
  while (n < tokenCount(uaTokens) && tokenStart(uaTokens, n) < end) n++;
  return n;
};

/**
 * The name a string gives itself when no word says bot: the token after "compatible;", else the
 * first token of a string that is not a browser's, else the first token appended after a browser's
 * own, else the host of its address.
 */
function selfName(t: Tokens, ua: string): string | null {
  const compatible = t.lower.indexOf('compatible');
  if (
    compatible >= 0 &&
    compatible + 1 < t.lower.length &&
    plausible(t.lower[compatible + 1]!) &&
    t.lower[compatible + 1] !== 'msie'
  )
    return nameAt(t, ua, compatible + 1);
  if (!BROWSER_STRING.test(ua)) {
    const i = t.lower.findIndex(plausible);
    if (i >= 0 && STARTS_WITH_LETTER.test(t.original[i]!)) return nameAt(t, ua, i);
  } else {
    const last = t.lower.findLastIndex((w) => BROWSER_WORDS.has(w));
    const i = last < 0 ? -1 : t.lower.findIndex((w, k) => k > last && plausible(w) && STARTS_WITH_LETTER.test(w));
    if (i >= 0 && ua.lastIndexOf(')') < t.starts[i]!) return nameAt(t, ua, i);
  }
  const address = ADDRESS_HOST.exec(ua)?.[1];
  if (address) return address.slice(0, 64);
  for (const re of [MAIL_HOST, BARE_HOST])
    for (const [, host] of ua.matchAll(re))
      if (HOST_ENDING.test(host!) && !PUBLIC_MAIL.test(host!)) return host!.slice(0, 64);
  const engine = ENGINE_COMMENT_NAME.exec(ua);
  return engine ? engine[1]!.trim().slice(0, 64) : null;
}

const WORD_CHAR = /\w/;
/** A name's characters: words, dots, dashes and "+", starting as a word (not "\\\\host", "{{.var}}", "JavaScript=yes"). */
const NAME_SHAPE = /^[a-z0-9][\w .+-]+$/i;
/**
 * The name at the words isbot's pattern matched, where the string names itself nowhere else: the
 * token the match falls in, with the words after it ("Neustar WPM", "QQDownload"), and before it
 * where that token is a generic word ("Anturis Agent", "ClickMagick Link Monitor"); a mailbox's
 * sender ("larbin2.6.3@unspecified.mail" is larbin); the match itself inside another token's
 * version ("CasperJS/1.1.2+PhantomJS/2.1.1"). None where every word is generic ("HTTP Service").
 */
function matchedName(t: Tokens, ua: string): string | null {
  const match = isbotWordAt(ua);
  if (match === null) return null;
  const k = t.starts.findIndex((s, i) => s <= match.at && match.at < s + t.original[i]!.length);
  let words: string[];
  if (k < 0) {
    // Only a whole word of the version ("+PhantomJS/"), not a piece of one ("+awesomecrawler").
    const end = match.at + match.text.length;
    if (WORD_CHAR.test(ua[match.at - 1] ?? '') || WORD_CHAR.test(ua[end] ?? '')) return null;
    words = [match.text];
  } else if (t.lower[k]!.includes('@')) words = [t.original[k]!.slice(0, t.original[k]!.indexOf('@'))];
  else {
    // A generic word set off by a dash says what the words before it are ("Dot TK - spider 3.0").
    const dashed = NOT_NAMES.has(t.lower[k]!) && t.original[k - 1] === '-' && t.starts[k - 1]! + 2 === t.starts[k];
    const end = dashed ? k - 1 : k;
    let from = end;
    while (
      from > 0 &&
      end - from < 2 &&
      NOT_NAMES.has(t.lower[k]!) &&
      t.starts[from - 1]! + t.original[from - 1]!.length + 1 === t.starts[from] &&
      ua.charCodeAt(t.starts[from]! - 1) === 32 &&
      STARTS_WITH_LETTER.test(t.original[from - 1]!) &&
      !NAME_STOP.has(t.lower[from - 1]!)
    )
      from--;
    words = dashed ? t.original.slice(from, end) : [...t.original.slice(from, k), nameAt(t, ua, k)];
  }
  const name = bareName(words.join(' ')).slice(0, 64);
  const generic = (w: string) => NOT_NAMES.has(w) || GENERIC_NAMES.has(w) || PUBLIC_MAIL.test(w) || NUMBERISH.test(w);
  return !NAME_SHAPE.test(name) || name.toLowerCase().split(' ').every(generic) ? null : name;
}

/** The product a string that is no browser's starts with, written as a product ("Yandex/1.01.001 ..."): its own name. */
function productName(t: Tokens, ua: string): string | null {
  const first = t.lower[0];
  // A "compatible; Name" claim names the sender ("DoCoMo/2.0 ... (compatible; moba-crawler; ...)", "Mozila/5.0 (compatible; ...)").
  if (
    first === undefined ||
    t.starts[0] !== 0 ||
    startsAsBrowser(ua) ||
    GENERIC_NAMES.has(first) ||
    COMPATIBLE.test(ua)
  )
    return null;
  if (!plausible(first) || !STARTS_WITH_LETTER.test(first) || ua.charCodeAt(first.length) !== 47) return null; // "/"
  return t.original[0]!;
}

/**
 * Whether a heuristic's bot is one without asking the client parser: it signs with an address (and
 * names no phone's system, as apps do) or calls itself a bot, and its name is not a device model
 * in the platform comment.
 */
function surelyBot(ua: string, name: string | null): boolean {
  if (name !== null && platformText(ua).includes(name.split(' ').pop()!)) return false;
  return signsAsBot(ua) || (name !== null && SURELY_BOT.test(name));
}

/** A list's family named after one word, with the words that follow it in the string ("xenu" in "Xenu Link Sleuth/1.3.8"). */
function withItsWords(ua: string, written: () => Tokens, { c, name }: Entry, token: string): Classification {
  if (name !== token) return c;
  const t = written();
  const at = t.lower.indexOf(token);
  return at < 0 ? c : { ...c, family: bareName(nameAt(t, ua, at)) };
}

/** A crawler's address written right after its token, in the "+http" manner of Googlebot's ("; (+http", " +http"). */
const ADDRESS_AFTER = /^(?:\/[^\s;()]*)?[\s;,]{0,3}\(?\+https?:\/\//i;
/** Whether the token (lowercase) is followed by a crawler's address: the token is the one that signs. */
function signsWithAddress(ua: string, token: string): boolean {
  if (!ua.includes('+http')) return false;
  const at = ua.toLowerCase().indexOf(token);
  return at >= 0 && ADDRESS_AFTER.test(ua.slice(at + token.length));
}

/**
 * device-detector's generic bot words in a string that is not a browser's with a device's platform
 * comment (those are left to the browser rules: the words' RegExp costs ~1 µs a browser string).
 */
const genericWords = (ua: string) =>
  (!BROWSER_STRING.test(ua) || platformText(ua) === '') && GENERIC_BOT_WORDS.test(ua);

/** Whether token i follows a browser string's last own token and its last comment ("... Chrome/54.0 Mobile Safari/537.36 DareBoost"). */
function appendedToBrowser(ua: string, lower: string[], i: number): boolean {
  // An in-app browser appends its app's name too ("... Mobile Safari/537.36 Viber", "[Pinterest/Android]").
  if (!BROWSER_STRING.test(ua) || isPersonClientName(lower[i]!) || FEATURE_PHONE_PROFILE.test(ua)) return false;
  return appendedAfter(ua, lower, i);
}

/** Whether token i comes after a browser string's own tokens and comments, last but for its version and a comment. */
function appendedAfter(ua: string, lower: string[], i: number): boolean {
  const last = lower.findLastIndex((w) => BROWSER_WORDS.has(w));
  if (last < 0 || i <= last) return false;
  const close = ua.lastIndexOf(')');
  const at = ua.toLowerCase().lastIndexOf(lower[i]!);
  // Last, with at most its version and a comment after it: an app's shell names more ("... Sonic Slack_SSB/4.36").
  const rest = ua.slice(at + lower[i]!.length);
  return (close < 0 || at > close) && ua.charCodeAt(at - 1) !== 91 && ENDS_NAME.test(rest); // not "[Name"
}
const ENDS_NAME = /^(?:\/\S*)?\s*(?:\(.*)?$/;
const FEATURE_PHONE_PROFILE = /\b(?:MIDP|CLDC)-\d/;

/** A header's name, or curl's and wget's option, pasted in front of the value. */
const HEADER_NAME = /^(?:user-agent:\s*|--user-agent=)/i;
/** HEADER_NAME's answer without a RegExp on the common path (every string asks it). */
const startsWithHeaderName = (ua: string) => {
  const c = ua.charCodeAt(0) | 32;
  return (c === 117 || c === 45) && HEADER_NAME.test(ua); // u, -
};
/**
 * A browser's prefix around one name and nothing else ("Mozilla/4.0 (compatible; Arachmo)"): isbot
 * reads the shape only with a version after the name, so without one it passed as a person. It is
 * judged as that shape is: a bot on evidence, else an unknown client.
 */
const NAME_ONLY_CLAIM = /^Mozilla\/\d\.\d+ \(compatible; ?[^;()]+;?\)$/i;

/**
 * A token that names both an app and its link-preview fetcher: the fetcher sends the token and a
 * version alone ("WhatsApp/2.19.81 A"); with anything more (a system, a device, Electron) it is the app.
 */
const APP_AND_PREVIEW = new Map([['whatsapp', /^WhatsApp\/[\d.]+(?:[ /][A-Z])?$/i]]);
/** An app that says it is one on a person's system ("NewsBlur iPhone App v3.6", "Netvibes iOS App"), not its service's fetcher. */
const APP_ON_DEVICE = /\b(?:iPhone|iPad|iOS|Android) App\b/i;
const isAppNotPreview = (ua: string, token: string) => {
  if (ua.includes(' App') && APP_ON_DEVICE.test(ua)) return true;
  const preview = APP_AND_PREVIEW.get(token);
  return preview !== undefined && !preview.test(ua);
};

/** What a crawler writes and a person's app does not: an address or contact, "compatible;", a bot's word. */
const inCrawlersManner = (ua: string) => CONTACT.test(ua) || COMPATIBLE.test(ua) || SURELY_BOT.test(ua);
/**
 * Whether token i is the app's own name in a person's app around a browser engine: an Electron
 * desktop app, its name right before the engine's Chrome ("... Code/1.86.2 Chrome/118.0
 * Electron/27.2.3 Safari/537.36"; device-detector reads any such name as the app), or an in-app
 * browser, a phone's WebView string with the app's name appended (Android's "; wv)", "... Mobile
 * Safari/537.36 Feedly/2.4.3"; iOS's, with no Safari of its own, "... Mobile/15E148 Bluesky/1.70").
 * Feed readers, social apps and editors share their names with their companies' fetchers and
 * agents; those write a crawler's manner (an address, "compatible;", a bot's word), the app none.
 * A whole mobile browser's string with a name appended is a tool's that poses as that phone
 * ("... Mobile Safari/537.36 Chrome-Lighthouse", "... Mobile/14A403 Safari/602.1 DareBoost").
 */
function inPeoplesApp(ua: string, tokens: () => string[], i: number): boolean {
  if (!startsAsBrowser(ua)) return false;
  // The tokens as strings, made only for a browser's string.
  const lower = tokens();
  if (!lower.includes('applewebkit')) return false;
  if (lower[i + 1] === 'chrome' && lower.includes('electron')) return !inCrawlersManner(ua);
  const platform = platformText(ua);
  if (platform === '' || !lower.includes('mobile')) return false;
  const webView = lower.includes('safari') ? ANDROID_WEBVIEW.test(platform) : IOS_DEVICE.test(platform);
  return webView && appendedAfter(ua, lower, i) && !inCrawlersManner(ua);
}
const ANDROID_WEBVIEW = /; wv\b/;
const IOS_DEVICE = /\b(?:iPhone|iPad|iPod)\b/;

export interface ClassifierOptions {
  /** Product tokens of people's own clients, by kind (content/bot-families.yaml `human_clients`). */
  humanClients?: Record<string, string[]>;
  /** The generated table (content/bot-families.generated.json), below ours. */
  generated?: GeneratedBotFamily[];
  /** Bytes of keys and answers the cache holds. */
  cacheBytes?: number;
  /** The client parser's view (default: a token index of device-detector's client lists). */
  personClient?: PersonClientCheck;
}

/**
 * Classifies a User-Agent in one pass over its product tokens (a hash lookup per token, phrases
 * checked only where their first word matches, heads of a token cut at - _ . only when the token
 * itself is unknown): our table first, then people's own clients, then the generated table
 * (device-detector's list, then crawler-user-agents'), then isbot for yes or no and a name from the
 * User-Agent's own tokens. Where only a heuristic says bot (isbot, an example token of
 * crawler-user-agents, a name read off the string), a client parser's view decides first whether
 * it is a person's browser or app. Only the first UA_PREFIX_CHARS characters are read; answers are
 * cached by that prefix in an LRU bounded in bytes.
 */
export function createClassifier(families: BotFamily[], options: ClassifierOptions = {}) {
  const { humanClients = {}, generated = [], cacheBytes = CLASSIFY_CACHE_BYTES } = options;
  const entries: [string, Entry][] = [
    ...families.flatMap((f) =>
      f.tokens.map((t): [string, Entry] => [
        t,
        {
          c: classificationOf(f),
          tier: f.kind === 'tool' || f.weak ? Tier.Weak : Tier.Curated,
          ...(f.weak && f.kind !== 'tool' ? { spelled: productTokens(t).original[0]! } : {}),
        },
      ]),
    ),
    ...generated.flatMap((g) =>
      g.tokens.map((t): [string, Entry] => [
        t,
        {
          c: classificationOf(asFamily(g)),
          name: g.family.toLowerCase(),
          // device-detector's "Generic Bot" words (Desktop, ...) are a heuristic, as example tokens are.
          tier: g.source === 'device-detector' && g.operator !== 'Generic Bot' ? Tier.Listed : Tier.Example,
          ...(g.source === 'device-detector' && g.operator === 'Generic Bot' ? { generic: true as const } : {}),
        },
      ]),
    ),
  ];
  const byPhrase = phraseIndex(entries.filter(([t]) => !t.endsWith('*')));
  const familyPrefixes = prefixList(entries);
  // Single-word tokens, for heads of longer tokens ("Dataprovider" in "Dataprovider.com").
  const single = new Map<string, Entry>();
  for (const [t, e] of entries)
    if (!t.endsWith('*') && productTokens(t).lower.length === 1 && !single.has(t.toLowerCase()))
      single.set(t.toLowerCase(), e);
  // Each person's token says whether it is only the HTTP stack an app runs on (CFNetwork, okhttp).
  const humanTokens = Object.entries(humanClients).flatMap(([kind, tokens]) =>
    tokens.map((t): [string, boolean] => [t, kind === 'app-http-stacks']),
  );
  const humanPrefixes = prefixList(humanTokens);
  // People's own clients of our table, less the HTTP stacks their apps run on (okhttp, WinHttp):
  // a stack alone is the library's own string; a client (Lavf, AppleCoreMedia) is a person's.
  const ownClients = new Set(
    Object.entries(humanClients)
      .filter(([kind]) => kind !== 'app-http-stacks')
      .flatMap(([, tokens]) => tokens.map((t) => t.toLowerCase())),
  );
  const isOwnClient = (token: string) => ownClients.has(token) || ownClients.has(withoutGluedVersion(token));
  const byToken = tokenInfos(byPhrase, phraseIndex(humanTokens.filter(([t]) => !t.endsWith('*'))), single, NOT_A_CLAIM);
  // Tools (curl, Java, HeadlessChrome) and generic words (Spider) name a family only when nothing
  // more specific does: "yacybot (...; java 1.6)" is yacybot, "PHP-Curl-Class ... curl/7" is PHP-Curl-Class.
  const weakTokens = new Set(
    families.filter((f) => f.kind === 'tool' || f.weak).flatMap((f) => f.tokens.map((t) => t.toLowerCase())),
  );
  const personClient = options.personClient ?? createPersonClientCheck();
  const cache = new LRUCache<string, Classification>({
    maxSize: cacheBytes,
    sizeCalculation: (_v, key) => 2 * key.length + 96,
  });
  /** A heuristic's "bot", unless the client parser sees a person's browser or app. */
  function unlessPerson(ua: string, bot: Classification): Classification {
    return personClient(ua) ? HUMAN : bot;
  }

  /**
   * A string isbot flags or that signs with an address, no table naming it. A bot only on evidence:
   * an address or bot word in its name (and no person's client named first, whose address is its
   * homepage: "Banshee/2.6.2 (http://banshee-project.org/)"), else unless it is a person's client,
   * a bot-like word, one of isbot's word patterns or a known library. Else an unknown product token
   * alone (isbot's shape patterns): an unknown client, not a bot.
   */
  function unknownBot(ua: string, written: () => Tokens): Classification {
    if (carriesAttackPayload(ua)) return ATTACK_PROBE;
    const t = written();
    const botWord = nameOf(t, ua);
    const first = t.lower[0];
    const personFirst =
      first !== undefined && (isPersonClientName(first) || isOwnClient(first) || MEDIA_PLAYER.test(first));
    // A name is read off the string, so it holds a bot's word only where the string does. Most
    // strings here (people's that isbot's shape patterns took) hold none and no address: whether they
    // are a person's is settled before a name is read (its RegExps were most of the slowest calls).
    const plain = botWord === null && !SURELY_BOT.test(ua) && !signsAsBot(ua);
    if (plain && (personFirst || personClient(ua))) return HUMAN;
    const name = botWord ?? selfName(t, ua);
    // Shown by its product token when it leads the string ("Tarantula/BETA-0.5 (... crawler ...)"); judged by its bot word.
    // Named by isbot's match last, and only once it is a bot: that takes isbot's word patterns once more.
    const bot = () => {
      const shown = productName(t, ua) ?? name ?? matchedName(t, ua);
      return shown ? botNamed(shown) : UNNAMED;
    };
    if (!plain) {
      if (personFirst && !(name !== null && SURELY_BOT.test(name))) return HUMAN;
      if (surelyBot(ua, name)) return bot();
      if (personClient(ua)) return HUMAN;
    }
    // A bot's word is evidence even where it is no name ("Manzama Fetcher", "SEO Browser").
    const botWords = botWord !== null || t.lower.some((w) => BOTLIKE.test(w) || EVIDENCE_ONLY.test(w));
    if (botWords || isbotByWord(ua) || namesLibrary(ua) || showsWork(ua) || genericWords(ua)) return bot();
    return UNKNOWN_CLIENT;
  }

  function uncached(ua: string): Classification {
    // Tokens are looked up by their place in the lowercase string: one is sliced out only where a
    // rule past the lookups reads it.
    const text = ua.toLowerCase();
    const tokens = tokenScan(text);
    // Where no character lowercased to two (only U+0130 does), the lowercase's places are ua's, and
    // its scan serves as ua's (productTokens, platformTokenCount).
    const uaTokens = text.length === ua.length ? tokens : undefined;
    let sliced: string[] | undefined;
    const lower = () => (sliced ??= tokenTexts(text, tokens));
    // The tokens as written, for the rules that read names.
    let asWritten: Tokens | undefined;
    const written = () => (asWritten ??= productTokens(ua, uaTokens));
    const infoOf = (i: number) => byToken.get(text, tokenStart(tokens, i), tokenEnd(tokens, i), tokenHashAt(tokens, i));
    let human = false;
    let stackOnly = true;
    let weak: Classification | undefined;
    let listed: { e: Entry; words: number; at: number } | undefined;
    let comparison = false;
    const familyPrefixed = holdsAny(familyPrefixes, text);
    const humanPrefixed = holdsAny(humanPrefixes, text);
    for (let i = 0; i < tokenCount(tokens); i++) {
      const start = tokenStart(tokens, i);
      const end = tokenEnd(tokens, i);
      const starts = infoOf(i);
      // "TelegramBot (like TwitterBot)": a token after "like" is a comparison, not a claim.
      const compared = comparison;
      comparison = starts !== undefined && starts.notAClaim;
      if (compared) continue;
      const cut = tokenCut(tokens, i);
      // A token no table holds names nothing unless a prefix starts it or its head (before a cut) is
      // a name: most of a browser's tokens end here.
      if (starts === undefined && cut < 0 && !familyPrefixed && !humanPrefixed) continue;
      const hit = starts?.family
        ? phraseAt(starts.family, text, tokens, i)
        : familyPrefixed
          ? prefixAt(familyPrefixes, text, start, end)
          : undefined;
      const e = hit?.value ?? headAt(byToken, text, start, cut);
      if (e) {
        if (inPeoplesApp(ua, lower, i)) {
          human = true;
          stackOnly = false;
        } else if (e.tier === Tier.Curated) return isAppNotPreview(ua, text.slice(start, end)) ? HUMAN : e.c;
        else if (e.tier === Tier.Weak) {
          if (e.spelled === undefined || written().original[i] === e.spelled) weak ??= e.c;
        } else if (!listed || e.tier < listed.e.tier) listed = { e, words: hit?.words ?? 1, at: i };
      }
      const person = starts?.human
        ? phraseAt(starts.human, text, tokens, i)
        : humanPrefixed
          ? prefixAt(humanPrefixes, text, start, end)
          : undefined;
      if (person !== undefined) {
        human = true;
        stackOnly &&= person.value;
      }
    }
    const browserString = startsAsBrowser(ua);
    // A person's client token of ours beats a list's single word, not a list's phrase ("Castro 2, Episode Duration Lookup").
    // ... nor a list's word that calls itself a bot ("Nokia6820/2.0 ... (compatible; Googlebot-Mobile/2.1)").
    // A list's token that signs with a crawler's address right after it ("AppEngine-Google; (+http://...)")
    // is the sender, whatever browser or phone string it is appended to.
    // So is one appended after a browser's whole string ("... Safari/537.36 DareBoost"), where
    // browsers' own add-ons never write a bot list's name.
    if (listed) {
      const token = lower()[listed.at]!;
      // Asked only where it decides (it lowercases the string).
      let signed: boolean | undefined;
      const isSigned = () =>
        (signed ??=
          signsWithAddress(ua, token) || (listed.e.generic !== true && appendedToBrowser(ua, lower(), listed.at)));
      if (!human || listed.words > 1 || SURELY_BOT.test(token) || isSigned()) {
        // crawler-user-agents' example tokens, and any list's word in a device's platform comment ("OCTOPUS-CORE T8"), are heuristics.
        // crawler-user-agents' example tokens name a bot only where isbot agrees, or where the
        // string is named by it (its first token, not a browser's string), or it signs.
        const namedBy = listed.at === 0 && listed.e.generic !== true && !browserString;
        if (listed.e.tier === Tier.Listed || namedBy || isSigned() || isbot(ua)) {
          const c = withItsWords(ua, written, listed.e, token);
          if (listed.e.tier === Tier.Listed && listed.at >= platformTokenCount(ua, uaTokens)) return c;
          // Judged by the words the string holds, not the list's name for them ("HTC Butterfly" is a
          // phone, whatever a list calls the bot that writes "Butterfly/").
          const words = lower()
            .slice(listed.at, listed.at + listed.words)
            .join(' ');
          return isSigned() || surelyBot(ua, words) ? c : unlessPerson(ua, c);
        }
      }
    }
    // A library or tool of device-detector's list named first is the program, named after the
    // list ("okhttp/3.4.1" is OkHttp), unless our table calls it a person's client or a person's
    // device runs it.
    if (weak === undefined && !browserString) {
      const library = leadingLibrary(lower()[0]);
      if (library !== null && !isOwnClient(lower()[0]!) && !isPersonDevice(ua)) return botNamed(library);
    }
    // A string named by its first token, no person's client, that is no browser's: a program on a
    // language runtime ("twine/3.4.2 ... CPython/3.8.12"), or an app on a system's HTTP stack whose
    // name is a program's work ("Email%20Extractor/29 CFNetwork/897.15", "URLTester/1 CFNetwork/974.1";
    // downloaders and thumbnailers are people's apps: "Free%20Video%20Downloader/1.5 CFNetwork/672.0.8").
    if (!browserString && (tokenCount(tokens) === 0 || infoOf(0)?.human === undefined)) {
      const onRuntime = RUNTIME.test(ua);
      if (onRuntime || (human && stackOnly)) {
        const first = written().original[0]!;
        if (onRuntime) return botNamed(first);
        const app = first.replaceAll('%20', ' ');
        if (SURELY_BOT.test(app) || APP_AT_WORK.test(app)) return botNamed(app);
      }
    }
    // A tool named first is the program, whatever app stack it runs on ("python-requests/2.7.0 CPython/3.6.1 Darwin/17.2.0").
    if (human && !(weak && weakTokens.has(lower()[0]!))) return HUMAN;
    if (weak) {
      const name = nameOf(written(), ua, (token) => weakTokens.has(token));
      const c = name ? botNamed(name) : weak;
      // "Android 13; Spider 8" is a phone; "LG-GT505 ... Java/ASVM/1.1 Profile/MIDP-2.1" a feature phone.
      if (name === null) return isPersonDevice(ua) ? HUMAN : c;
      return platformText(ua).includes(c.family!.split(' ').pop()!) ? unlessPerson(ua, c) : c;
    }
    // No User-Agent at all is no person's browser: a script's, counted apart as an unknown client.
    if (ua === '') return UNKNOWN_CLIENT;
    // isbot misses some that sign with an address ("Hatena Antenna/0.5 (http://a.hatena.ne.jp/help)").
    // device-detector's generic words here only where the string is no browser's (its RegExp costs ~1 µs a browser string).
    if (!mayBeBot(ua) && !signsAsBot(ua) && (browserString || !GENERIC_BOT_WORDS.test(ua)) && !NAME_ONLY_CLAIM.test(ua))
      return HUMAN;
    return unknownBot(ua, written);
  }

  // The table's families by their names and tokens: as written (lowercased) and by the keys they
  // look like (made on the first string beyond ASCII).
  const tableNames = new Map(
    families.flatMap((f) => [f.family, ...f.tokens].map((t) => [t.toLowerCase(), f] as [string, BotFamily])),
  );
  let looks: Map<string, BotFamily> | undefined;
  const lookAlikes = () =>
    (looks ??= new Map(
      families.flatMap((f) => [f.family, ...f.tokens].map((t) => [nameKeys(t).folded, f] as [string, BotFamily])),
    ));

  return function classify(userAgent: string): Classification {
    const key = uaPrefix(userAgent);
    const hit = cache.get(key);
    if (hit) return hit;
    // Some clients and fixtures send the header's name inside its value: the value is what follows.
    const ua = startsWithHeaderName(key) ? key.replace(HEADER_NAME, '') : key;
    const result = asClaimed(uncached(ua), ua);
    cache.set(key, result);
    return result;
  };

  /**
   * A name of the table's written otherwise is a claim of that family, which its verification then
   * judges, not a new family announcing itself under a name it copies: a version glued on
   * (`Googlebot2.1`, read as a bot named Googlebot), a look-alike beyond ASCII (`Gооglebot` with
   * Cyrillic o's, `ＧＰＴＢｏｔ`), even where the rest of the string reads as a person's or names
   * another bot (`ＧＰＴＢｏｔ/1.2 (+https://openai.com/gptbot)`). A name the table does not know,
   * beyond ASCII, shows without invisible and control characters (a zero-width space, a
   * right-to-left override, NUL).
   */
  function asClaimed(c: Classification, ua: string): Classification {
    if (c.known !== null) return c;
    const beyondAscii = BEYOND_ASCII.test(ua);
    if (c.bot && c.family !== null) {
      const name = beyondAscii ? c.family.replace(INVISIBLE, '') : c.family;
      const copied =
        tableNames.get(name.toLowerCase()) ?? (beyondAscii ? lookAlikes().get(nameKeys(name).folded) : undefined);
      if (copied) return classificationOf(copied);
      if (name !== c.family) return { ...c, family: name === '' ? 'unnamed bot' : name };
    }
    if (beyondAscii)
      for (const token of productTokens(ua).original) {
        if (!BEYOND_ASCII.test(token)) continue;
        const copied = lookAlikes().get(nameKeys(token.replace(INVISIBLE, '')).folded);
        if (copied) return classificationOf(copied);
      }
    return c;
  }
}
const BEYOND_ASCII = /[^\x00-\x7f]/;
// Default-ignorable code points (zero-width characters, bidirectional controls) and controls.
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}]/gu;
export type Classifier = ReturnType<typeof createClassifier>;

/**
 * A classifier that first compares a request's User-Agent with the last one on its connection: a
 * keep-alive connection's requests mostly repeat it, and comparing (~10 ns) costs far less than
 * hashing a fresh 100-character string for the cache (~150 ns a request). The answer is the
 * classifier's either way; a User-Agent longer than UA_PREFIX_CHARS is not kept.
 */
export function classifyOnConnection(classify: Classifier) {
  const last = new WeakMap<object, { userAgent: string; answer: Classification }>();
  return (userAgent: string, connection: object | undefined): Classification => {
    if (connection === undefined) return classify(userAgent);
    const seen = last.get(connection);
    if (seen !== undefined && seen.userAgent === userAgent) return seen.answer;
    const answer = classify(userAgent);
    if (userAgent.length > UA_PREFIX_CHARS) return answer;
    if (seen === undefined) last.set(connection, { userAgent, answer });
    else {
      seen.userAgent = userAgent;
      seen.answer = answer;
    }
    return answer;
  };
}
