// First: keeps node's nextTick entries fast while the client lists below load (see tick-shape.ts).
import './tick-shape.ts';
import { createRequire } from 'node:module';
import { closing, topLevelBranches } from './literal-index.ts';
import { lowerTokens } from './tokens.ts';

// A browser/app parser's view of a User-Agent, asked only when our table names no bot and the only
// evidence is a heuristic (isbot, a name read off the string): a device model or an app's name
// (`Podfriend 2.0 ios`, `Clementine 1.1`, `Dillo/2.2`) is never a bot's name.
//
// It used to run node-device-detector's parser under a time budget (~20 µs a string at the median,
// up to ~1 ms), so past the budget a string was judged without it and its verdict hung on what
// came before it. Now the parser's own client lists (browsers, mobile apps, media players, mail
// and calendar clients; its libraries apart) are read once at module load into a set of the
// product names their patterns start with: one hash lookup per product token, the same answer
// whatever came before, and no budget.

const require = createRequire(import.meta.url);
const list = (name: string) =>
  require(`node-device-detector/regexes/client/${name}.js`) as { regex: string; name: string }[];

/**
 * The alternatives a client pattern starts with: `(?:FBAV|Facebook/)` gives FBAV and Facebook/,
 * `Clementine(?:[ /]...)` itself; a leading `^` or `(?:^|...)` is dropped, and a group followed by
 * `?` or `*` is optional, so what follows it starts the pattern.
 */
function leadingAlternatives(pattern: string): string[] {
  let s = pattern.replace(/^\^/, '').replace(/^\(\?:\^\|[^)]*\)/, '');
  if (s.startsWith('(?:')) {
    const end = closing(s, 0);
    const after = s[end + 1];
    s = after === '?' || after === '*' ? s.slice(end + 2) : s.slice(3, end);
  }
  return topLevelBranches(s).map((a) => a.replace(/^\^/, ''));
}

/**
 * The literal product names a pattern's alternatives start with, lowercase: `(?:FBAV|Facebook/)`
 * gives fbav and facebook, `Clementine(?:[ /]...)` clementine, `MPlayer[ /]` mplayer. A name under
 * 3 characters or one a quantifier shortens below that is left out.
 */
export function leadingNames(pattern: string): string[] {
  const names: string[] = [];
  for (const a of leadingAlternatives(pattern)) {
    const m = /^((?:[A-Za-z0-9_-]|\\[.-])+)/.exec(a);
    if (!m) continue;
    let word = m[1]!.replace(/\\/g, '');
    const next = a[m[0].length];
    if (next !== undefined && '?*+{'.includes(next)) word = word.slice(0, -1);
    if (word.length >= 3) names.push(word.toLowerCase());
  }
  return names;
}

/**
 * Words of the client lists that bots and tools write too (every crawler that poses as a browser
 * says Chrome and Safari), or that say nothing alone.
 */
const SHARED_WORDS = new Set([
  'mozilla',
  'chrome',
  'chromium',
  'safari',
  'firefox',
  'applewebkit',
  'webkit',
  'gecko',
  'khtml',
  'like',
  'mobile',
  'version',
  'compatible',
  'msie',
  'trident',
  'edge',
  'opera',
  'apple',
  'amazon',
  'google',
  'microsoft',
  'yandex',
  'echo',
  'the',
  'lib',
  'app',
  'browser',
  'web',
  'http',
  'client',
  'android',
  'linux',
  'windows',
  'macintosh',
  'headlesschrome',
  'electron',
  // Vendors' and generic words that start an app's pattern, and name bots and tools as often
  // (Yahoo Pipes, Pinterest/0.1, Imagga Downloader, Scrapinghub's splash renderer).
  'yahoo',
  'pinterest',
  'downloader',
  'splash',
  'htc',
]);

/** Product names of people's clients: browsers, mobile apps, media players, mail, calendar and feed clients. */
export const PERSON_CLIENT_NAMES: ReadonlySet<string> = (() => {
  const names = new Set<string>();
  // Feed readers too: podcast clients (gPodder, BashPodder) are listed there; the server-side
  // fetchers among them (Feedly, NewsBlur) are in our table or the bot lists, which are read first.
  for (const file of ['browsers', 'mobile_apps', 'mediaplayers', 'pim', 'feed_readers'])
    for (const entry of list(file))
      for (const name of leadingNames(entry.regex)) if (!SHARED_WORDS.has(name)) names.add(name);
  return names;
})();

/**
 * Two-word names of people's clients whose first word is shared (Google Earth, Microsoft Office,
 * Yahoo Mail, The Bat): the first word maps to the second words that follow it in a list's
 * pattern. Splash is left out: Scrapinghub's renderer writes "Splash Version".
 */
export const PERSON_CLIENT_PHRASES: ReadonlyMap<string, ReadonlySet<string>> = (() => {
  const phrases = new Map<string, Set<string>>();
  const PHRASE = /^([A-Za-z0-9_-]+)(?: |%20|\\s\+?|\[ _\]|\[ \]\??| \?)([A-Za-z][A-Za-z0-9]+)/;
  for (const file of ['browsers', 'mobile_apps', 'mediaplayers', 'pim', 'feed_readers'])
    for (const entry of list(file))
      for (const alternative of leadingAlternatives(entry.regex)) {
        const m = PHRASE.exec(alternative);
        const first = m?.[1]!.toLowerCase();
        if (m === null || first === undefined || first === 'splash' || !SHARED_WORDS.has(first)) continue;
        if (!phrases.has(first)) phrases.set(first, new Set());
        phrases.get(first)!.add(m[2]!.toLowerCase());
      }
  return phrases;
})();

/**
 * Product names of HTTP libraries and tools (the parser's libraries list), each with the list's
 * name for it (okhttp: OkHttp, winhttp: Windows HTTP): a program's, not a person's.
 */
export const LIBRARIES: ReadonlyMap<string, string> = (() => {
  const names = new Map<string, string>();
  for (const entry of list('libraries')) {
    const pattern = entry.regex.toLowerCase();
    for (const name of leadingNames(entry.regex)) {
      // The first word of a longer name is not the library's ("Podcast Provider ... Radio Downloader", "KaiOS Downloader").
      const at = pattern.indexOf(name);
      if (/^ [a-z]/.test(pattern.slice(at + name.length, at + name.length + 2))) continue;
      if (!SHARED_WORDS.has(name) && !names.has(name)) names.set(name, entry.name);
    }
  }
  return names;
})();
export const LIBRARY_NAMES: ReadonlySet<string> = new Set(LIBRARIES.keys());

/**
 * Systems only people's devices report, as product tokens (a bot says Linux or Windows as often as
 * a person), and the feature phones' Java profile (`Profile/MIDP-2.0 Configuration/CLDC-1.1`,
 * where the token is cut at the slash and the profile read whole).
 */
const PERSONAL_SYSTEMS = new Set([
  'ios',
  'ipados',
  'iphone',
  'ipad',
  'ipod',
  'android',
  'harmonyos',
  'kaios',
  'tizen',
  'webos',
  'web0s',
  'watchos',
  'tvos',
  'symbianos',
  'symbian',
  'series40',
  'series60',
  's60version',
  'blackberry',
  'bada',
  'j2me',
  'googletv',
  'netcast',
  'smart-tv',
  'smarttv',
  'hbbtv',
  'playstation',
  'nintendo',
  'xbox',
  // Browsers whose list pattern starts with a word too short to index ("UC[ ]?Browser").
  'ucbrowser',
  'ucweb',
]);
const FEATURE_PHONE =
  /\b(?:MIDP|CLDC)-\d|\bUP\.Browser\b|\bWAP[ _-]?Browser|\bObigo\b|\bTeleca\b|\bNetFront\b|\bCE-HTML\b/i;
/**
 * What undoes a personal system: a bot's address or contact. (A bot word outside the device model
 * is judged before this is asked: "Android 7.0; M bot 51" and "Android 13; Spider 8" are phones.)
 */
const BOT_MARK = /https?:|@/i;
/** A token's name without a version glued to it: "lavf52.111.0" is Lavf. */
const GLUED_VERSION = /[\d._-]+$/;

/** The token less a version glued to it; the RegExp only where the token ends as a version does (most do not). */
export function withoutGluedVersion(token: string): string {
  const last = token.charCodeAt(token.length - 1);
  // 0-9 . _ -
  return (last >= 48 && last <= 57) || last === 46 || last === 95 || last === 45
    ? token.replace(GLUED_VERSION, '')
    : token;
}

/** Whether a string names a library or tool of the client parser's list. */
export function namesLibrary(ua: string): boolean {
  for (const token of lowerTokens(ua))
    if (LIBRARY_NAMES.has(token) || LIBRARY_NAMES.has(token.split(':')[0]!)) return true;
  return false;
}

/**
 * Matomo device-detector's own generic bot words (its "Generic Bot" pattern: analyzer, checker,
 * crawl, fetcher, grabber, indexer, inspector, lookup, monitor, probe, resolver, scanner, scraper,
 * validator, ...), as its bot list ships them: evidence of a program where no list names one. Its
 * leading `[a-z0-9_-]*` (any word may end so) is dropped: the same strings match, without V8
 * trying the word's prefix at every position.
 */
export const GENERIC_BOT_WORDS: RegExp = (() => {
  const bots = require('node-device-detector/regexes/bots.js') as { regex: string; name: string }[];
  const generic = bots.find((b) => b.name === 'Generic Bot' && b.regex.startsWith('[a-z0-9_-]*(?:'));
  if (!generic) throw new Error("device-detector's Generic Bot word pattern not found");
  return new RegExp(generic.regex.slice('[a-z0-9_-]*'.length), 'i');
})();

/**
 * The list's name of the library or tool a string names as its first product token (its version
 * glued or not: "okhttp/3.4.1", "WinHTTP", "ReactorNetty/0.7.10.RELEASE"): the string is the
 * library's own, sent by a program. Null when the first token names none.
 */
export function leadingLibrary(first: string | undefined): string | null {
  if (first === undefined) return null;
  // Lookups first, allocation only where a colon or a glued version may hide the name: every string gets here.
  const named = LIBRARIES.get(first);
  if (named !== undefined) return named;
  const colon = first.indexOf(':');
  if (colon > 0) return LIBRARIES.get(first.slice(0, colon)) ?? null;
  const head = withoutGluedVersion(first);
  return head !== first && head.length >= 3 ? (LIBRARIES.get(head) ?? null) : null;
}

/**
 * Answers "is this a person's browser or app?": a client the parser's lists name, or a system only
 * people's devices run (and no address or bot word beside it), or a feature phone's profile.
 * Deterministic and cheap (a scan of the product tokens): the same string always gets the same
 * answer.
 */
export function isPersonClient(ua: string): boolean {
  const tokens = lowerTokens(ua);
  return (
    tokens.some((token, i) => isPersonClientName(token) || PERSON_CLIENT_PHRASES.get(token)?.has(tokens[i + 1]!)) ||
    showsPersonDevice(ua, tokens)
  );
}

/**
 * Whether a string shows a person's device (a system only people's devices run, or a feature
 * phone's profile), whatever client it names: a tool's token beside it ("Java/ASVM/1.1" on a
 * feature phone) is the device's runtime, not a bot.
 */
export function isPersonDevice(ua: string): boolean {
  return showsPersonDevice(ua, lowerTokens(ua));
}

function showsPersonDevice(ua: string, tokens: string[]): boolean {
  if (FEATURE_PHONE.test(ua)) return true;
  if (BOT_MARK.test(ua)) return false;
  return tokens.some((token) => PERSONAL_SYSTEMS.has(token));
}

export type PersonClientCheck = (ua: string) => boolean;

/** The check the classifier uses (kept as a factory so tests can hand in their own). */
export function createPersonClientCheck(): PersonClientCheck {
  return isPersonClient;
}

/** Whether a lowercase product token (or its head before a glued version) names a person's client. */
export function isPersonClientName(token: string): boolean {
  if (PERSON_CLIENT_NAMES.has(token)) return true;
  const head = withoutGluedVersion(token);
  return head !== token && head.length >= 3 && PERSON_CLIENT_NAMES.has(head);
}
