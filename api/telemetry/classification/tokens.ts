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

/**
 * Where the product tokens of a string start and end, as [start, end, start, end, ...], in one
 * scan: what follows a slash is a version and is skipped; tokens starting with "+" (URLs,
 * addresses) are dropped. A scan of char codes, not a RegExp split: on the one-byte strings node
 * makes of header values it takes 60% of the time and makes no strings for the versions.
 */
function tokenBounds(s: string): number[] {
  const bounds: number[] = [];
  const n = s.length;
  let i = 0;
  while (i < n) {
    if (isDelimiter(s.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    let code = 0;
    while (i < n && (code = s.charCodeAt(i)) !== SLASH && !isDelimiter(code)) i++;
    if (i > start && s.charCodeAt(start) !== PLUS) bounds.push(start, i);
    // A version: skip to the next delimiter.
    if (code === SLASH) while (i < n && !isDelimiter(s.charCodeAt(i))) i++;
  }
  return bounds;
}

/**
 * Splits a User-Agent into product tokens: `Mozilla/5.0 (compatible; GPTBot/1.2;
 * +https://openai.com/gptbot)` gives mozilla, compatible, gptbot.
 */
export function productTokens(ua: string): Tokens {
  const bounds = tokenBounds(ua);
  const lower: string[] = [];
  const original: string[] = [];
  const starts: number[] = [];
  for (let k = 0; k < bounds.length; k += 2) {
    const token = ua.slice(bounds[k], bounds[k + 1]);
    original.push(token);
    lower.push(token.toLowerCase());
    starts.push(bounds[k]!);
  }
  return { lower, original, starts };
}

/** The lowercase product tokens only, as productTokens gives them, for the hot path: one toLowerCase for the string. */
export function lowerTokens(ua: string): string[] {
  const lower = ua.toLowerCase();
  const bounds = tokenBounds(lower);
  const tokens = new Array<string>(bounds.length >> 1);
  for (let k = 0; k < bounds.length; k += 2) tokens[k >> 1] = lower.slice(bounds[k], bounds[k + 1]);
  return tokens;
}
