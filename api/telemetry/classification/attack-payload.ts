import { indexedAlternation } from './literal-index.ts';

// An attack carried in the User-Agent header: a scanner puts its payload wherever a server may
// log or evaluate a header, and no person's browser or app writes one. Such a request is a bot's,
// whatever browser its string also names (Yauaa's Hacker test cases, test/telemetry/classify.test.ts).

/**
 * The payloads' markers, one branch each so that literal-index.ts can index every one by a literal
 * it holds (the classifier's last gate asks them in the same scan as isbot's patterns).
 */
export const ATTACK_MARKERS: readonly string[] = [
  // Log4Shell's lookups and template evaluation: ${jndi:...}, ${${::-j}...}, ${7*7}, {{7*7}}.
  String.raw`\$\{(?:jndi|\$\{|::-|env:|lower:|upper:|sys:|\d+\s*[*+]\s*\d+\s*\})`,
  String.raw`\{\{\s*\d+\s*\*\s*\d+\s*\}\}`,
  // Shellshock, and a command's output substituted in.
  String.raw`\(\)\s*\{\s*[:\w]`,
  String.raw`\$\((?:nslookup|curl|wget|echo|sleep|id|cat|whoami)\b`,
  String.raw`\bnslookup\b`,
  // Path traversal, plain or URL-encoded, and the files it reaches for.
  String.raw`\.\.[\\/%]`,
  String.raw`%2e%2e`,
  String.raw`%252e`,
  String.raw`\/etc\/(?:passwd|shadow|group|hosts)\b`,
  String.raw`\bboot\.ini\b`,
  String.raw`\bweb-inf\b`,
  String.raw`file:\/\/\/`,
  // SQL injection: a query's words, a database's sleep or lookup, a tautology, a comment that ends it.
  String.raw`\bunion(?:\s+all)?\s+select\b`,
  String.raw`\bselect\s.+\sfrom\s`,
  String.raw`\border\s+by\s+\d`,
  String.raw`\bcase\s+when\s+\d+\s*=`,
  String.raw`\bpg_sleep\s*\(`,
  String.raw`\bbenchmark\s*\(`,
  String.raw`\bxmltype\s*\(`,
  String.raw`\bgenerate_series\s*\(`,
  String.raw`\bmake_set\s*\(`,
  String.raw`\belt\s*\(\s*\d`,
  String.raw`\bwaitfor\s+delay\b`,
  String.raw`\bsleep\s*\(\s*\d`,
  String.raw`\bdbms_pipe\.`,
  String.raw`\butl_inaddr\.`,
  String.raw`\bctxsys\.`,
  String.raw`'\s*(?:or|and)\s+['"\d]`,
  String.raw`"\s*(?:or|and)\s+['"\d]`,
  String.raw`\b(?:or|and)\s+(?:not\s+)?\d[\d\s+*-]*=\s*\d`,
  String.raw`\bchar\s*\(\s*\d+\s*\)\s*(?:\|\||\+)`,
  String.raw`\bchr\s*\(\s*\d+\s*\)\s*(?:\|\||\+)`,
  String.raw`['")]\s*;?\s*--`,
  String.raw`\d\s*--(?:\s+[a-z]{4})?$`,
  // Script and code injection.
  String.raw`<\s*(?:script|svg|img|iframe)\b`,
  String.raw`<\?php`,
  String.raw`javascript:`,
  String.raw`\bonerror\s*=`,
  String.raw`\bonload\s*=`,
  String.raw`\beval\s*\(`,
  String.raw`\bmd5\s*\(`,
  String.raw`\balert\s*\(`,
  String.raw`\bprint\s*\(\s*\d`,
  String.raw`\.concat\(\s*\d`,
];

/**
 * What a payload holds besides its marker: a quote, `$ < { = | %`, `..`, `--` or `/etc/`. One
 * character class clears a bot's string in a fifth of the time a scan for the markers takes (1% of
 * bots' strings hold one); of Yauaa's 450 attack cases, every one a marker finds holds one too.
 */
const SUSPECT = /[$'"<{=|%]|\.\.|--|\/etc\//;
const HAS_MARKER = indexedAlternation(ATTACK_MARKERS);

/**
 * Whether a User-Agent carries an attack's payload (SQL or code injection, Log4Shell, Shellshock,
 * path traversal): one of the markers, and a character a payload holds. Indexed: as one RegExp, the
 * markers' 46 branches tried at every position cost more than the rest of a bot's classification.
 */
export const carriesAttackPayload = (ua: string): boolean => SUSPECT.test(ua) && HAS_MARKER(ua);
