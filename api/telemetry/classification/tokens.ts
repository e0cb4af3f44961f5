/** The product tokens of a User-Agent, lowercased and as written, with where each starts. */
export interface Tokens {
  lower: string[];
  original: string[];
  starts: number[];
}

// Characters that end a token: whitespace (what RegExp's \s matches) and ; ( ) , [ ] { } " ' < > |
const DELIMITER = new Uint8Array(256);
for (const ch of ' \t\n\v\f\r\u00a0;(),[]{}"\'<>|') DELIMITER[ch.charCodeAt(0)] = 1;
/** \s beyond Latin-1: node's parser hands header values over as Latin-1, other callers may not. */
const WIDE_SPACE = new Set([
  0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
  0x202f, 0x205f, 0x3000, 0xfeff,
]);
const SLASH = 47;
const PLUS = 43;

const isDelimiter = (code: number) => (code < 256 ? DELIMITER[code] === 1 : WIDE_SPACE.has(code));

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
/** A token's hash: FNV-1a over the character codes of s[start, end) (token-table.ts looks tokens up by it). */
export function tokenHash(s: string, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h;
}

const isCut = (code: number) => code === 45 || code === 95 || code === 46; // - _ .

/**
 * The product tokens of a string, four numbers each, in one scan: where the token starts and ends,
 * its hash (tokenHash's), and where its last - _ or . is past its second character (-1 when
 * nowhere), the place a name's own suffix starts ("Googlebot-Mobile"). What follows a slash is a
 * version and is skipped; tokens starting with "+" (URLs, addresses) are dropped. A scan of char
 * codes, not a RegExp split: on the one-byte strings node makes of header values it takes 60% of
 * the time and makes no strings for the versions. Hash and cut are read in the same pass, as each
 * pass over the characters costs as much again.
 */
export function tokenScan(s: string): number[] {
  const tokens: number[] = [];
  const n = s.length;
  let i = 0;
  while (i < n) {
    if (isDelimiter(s.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    let code = 0;
    let hash = FNV_OFFSET;
    let cut = -1;
    while (i < n && (code = s.charCodeAt(i)) !== SLASH && !isDelimiter(code)) {
      hash = Math.imul(hash ^ code, FNV_PRIME);
      if (isCut(code) && i > start + 1) cut = i;
      i++;
    }
    if (i > start && s.charCodeAt(start) !== PLUS) tokens.push(start, i, hash, cut);
    // A version: skip to the next delimiter.
    if (code === SLASH) while (i < n && !isDelimiter(s.charCodeAt(i))) i++;
  }
  return tokens;
}
/** How many tokens a scan found, and token i's start, end, hash and last cut. */
export const tokenCount = (t: number[]) => t.length >> 2;
export const tokenStart = (t: number[], i: number) => t[4 * i]!;
export const tokenEnd = (t: number[], i: number) => t[4 * i + 1]!;
export const tokenHashAt = (t: number[], i: number) => t[4 * i + 2]!;
export const tokenCut = (t: number[], i: number) => t[4 * i + 3]!;

/**
 * Splits a User-Agent into product tokens: `Mozilla/5.0 (compatible; GPTBot/1.2;
 * +https://openai.com/gptbot)` gives mozilla, compatible, gptbot. The scan may be given: that of
 * ua's lowercase when it has ua's length, whose delimiters are where ua's are (lowercasing maps each
 * character to one, a letter to a letter; only U+0130 becomes two).
 */
export function productTokens(ua: string, tokens = tokenScan(ua)): Tokens {
  const lower: string[] = [];
  const original: string[] = [];
  const starts: number[] = [];
  for (let k = 0; k < tokenCount(tokens); k++) {
    const token = ua.slice(tokenStart(tokens, k), tokenEnd(tokens, k));
    original.push(token);
    lower.push(token.toLowerCase());
    starts.push(tokenStart(tokens, k));
  }
  return { lower, original, starts };
}

/** The lowercase product tokens only, as productTokens gives them, for the hot path: one toLowerCase for the string. */
export function lowerTokens(ua: string): string[] {
  const lower = ua.toLowerCase();
  return tokenTexts(lower, tokenScan(lower));
}

/** The tokens of a string that tokenScan found. */
export function tokenTexts(s: string, tokens: number[]): string[] {
  const texts = new Array<string>(tokenCount(tokens));
  for (let k = 0; k < texts.length; k++) texts[k] = s.slice(tokenStart(tokens, k), tokenEnd(tokens, k));
  return texts;
}
