/** Says what a `url_template` is, beside every tool list that may carry one. */
export const URI_TEMPLATE_NOTE =
  'A url_template is an RFC 6570 URI template: expand {id} and the like before the request.';

/** True when a URL has an RFC 6570 expression such as `{id}`: it is a template, not an address. */
export const isUriTemplate = (url: string): boolean => /\{[^}]+\}/.test(url);

/**
 * A tool as documents publish it: a URL with a parameter is given as `url_template` (an RFC 6570
 * URI template, to expand before use), never as a `url` that answers 404 when followed.
 */
export function publishedTool<T extends { url: string }>(
  tool: T,
): Omit<T, 'url'> & ({ url: string } | { url_template: string }) {
  const { url, ...rest } = tool;
  return isUriTemplate(url) ? { ...rest, url_template: url } : { ...rest, url };
}
