/** The product tokens of a User-Agent, lowercased and as written, with where each starts. */
export interface Tokens {
  lower: string[];
  original: string[];
  starts: number[];
}

// Characters that end a token: space, tab, ; ( ) , [ ] { } " ' < > |
const DELIMITER = new Uint8Array(128);
for (const ch of ' \t;(),[]{}"\'<>|') DELIMITER[ch.charCodeAt(0)] = 1;
const SLASH = 47;
const PLUS = 43;

const isDelimiter = (code: number) => code < 128 && DELIMITER[code] === 1;

/**
 * Splits a User-Agent into product tokens in one scan: `Mozilla/5.0 (compatible; GPTBot/1.2;
 * +https://openai.com/gptbot)` gives mozilla, compatible, gptbot. What follows a slash is a version
 * and is skipped; tokens starting with "+" (URLs, addresses) are dropped.
 */
export function productTokens(ua: string): Tokens {
  const lower: string[] = [];
  const original: string[] = [];
  const starts: number[] = [];
  const n = ua.length;
  let i = 0;
  while (i < n) {
    while (i < n && isDelimiter(ua.charCodeAt(i))) i++;
    if (i >= n) break;
    const start = i;
    while (i < n && ua.charCodeAt(i) !== SLASH && !isDelimiter(ua.charCodeAt(i))) i++;
    if (ua.charCodeAt(start) !== PLUS && i > start) {
      const token = ua.slice(start, i);
      original.push(token);
      lower.push(token.toLowerCase());
      starts.push(start);
    }
    // A version: skip to the next delimiter.
    if (i < n && ua.charCodeAt(i) === SLASH) while (i < n && !isDelimiter(ua.charCodeAt(i))) i++;
  }
  return { lower, original, starts };
}

const SPLIT = /[\s;(),[\]{}"'<>|]+/;

/**
 * The lowercase product tokens only, as productTokens gives them, for the hot path: one
 * toLowerCase and one split, no per-character work in JavaScript.
 */
export function lowerTokens(ua: string): string[] {
  const parts = ua.toLowerCase().split(SPLIT);
  const out: string[] = [];
  for (const part of parts) {
    if (part === '' || part.charCodeAt(0) === PLUS) continue;
    const slash = part.indexOf('/');
    if (slash === 0) continue;
    out.push(slash < 0 ? part : part.slice(0, slash));
  }
  return out;
}
