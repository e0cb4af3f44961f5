/** Twenty crawlers' names as they appear in the wild, the families a ledger flood mixes in. */
const REAL_CRAWLERS = [
  'Googlebot',
  'bingbot',
  'GPTBot',
  'ClaudeBot',
  'PerplexityBot',
  'Applebot',
  'DuckDuckBot',
  'YandexBot',
  'Baiduspider',
  'CCBot',
  'Bytespider',
  'Amazonbot',
  'AhrefsBot',
  'SemrushBot',
  'MJ12bot',
  'DotBot',
  'PetalBot',
  'SeznamBot',
  'facebookexternalhit',
  'Twitterbot',
];

/**
 * User-Agents of the twenty real crawlers and `invented` made-up ones (`XyzBot-0`...), each in the
 * `compatible;` form: 20 named families and as many unknown ones as a flood wants.
 */
export const crawlerAgents = (invented: number): string[] =>
  [...REAL_CRAWLERS, ...Array.from({ length: invented }, (_, i) => `XyzBot-${i}`)].map(
    (name) => `Mozilla/5.0 (compatible; ${name}/1.0; +https://crawler.example/${name})`,
  );
