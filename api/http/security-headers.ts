/**
 * The security headers of every answer, in one place: the gateway adds them to prebuilt files,
 * engine answers, problems and the pages Astro renders, and the build writes them to `_headers`
 * for a CDN. HTML gets a strict policy its pages work under (no inline script or style); every
 * other answer gets one that lets it load nothing and be framed nowhere.
 */

/** The Content-Security-Policy of HTML pages. */
export const HTML_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/** The Content-Security-Policy of JSON, text and every other non-HTML answer. */
export const OTHER_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Headers that do not depend on the answer's type. */
export const COMMON_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'strict-origin-when-cross-origin',
  // For browsers that predate frame-ancestors.
  'X-Frame-Options': 'DENY',
};

// Module constants, not literals in the functions: a literal is a new RegExp each time it runs, and these run per answer.
const HTML = /^\s*text\/html\b/i;
const TEXT = /^\s*text\//i;
const CHARSET = /;\s*charset=/i;
const isHtml = (contentType: string) => HTML.test(contentType);

/** A text media type without a charset gets `; charset=utf-8` (every text this service writes is UTF-8). */
export function withCharset(contentType: string): string {
  if (!TEXT.test(contentType) || CHARSET.test(contentType)) return contentType;
  return `${contentType.trim()}; charset=utf-8`;
}

// Built once: every answer spreads one of these two.
const HTML_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...COMMON_SECURITY_HEADERS,
  'Content-Security-Policy': HTML_CSP,
});
const OTHER_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...COMMON_SECURITY_HEADERS,
  'Content-Security-Policy': OTHER_CSP,
});

/** The security headers of an answer of this Content-Type (empty or missing: treated as non-HTML). */
export function securityHeaders(contentType: string | undefined): Readonly<Record<string, string>> {
  return isHtml(contentType ?? '') ? HTML_HEADERS : OTHER_HEADERS;
}

/** The same, as the flat [name, value, ...] list node's writeHead takes. */
export function securityHeaderList(contentType: string | undefined): string[] {
  return Object.entries(securityHeaders(contentType)).flat();
}
