/** A request target as the gateway serves it. */
export interface RequestTarget {
  /** The origin-form: the path and query, never an authority. */
  originForm: string;
  /**
   * False for an absolute-form target that names another server (its authority is not the
   * request's Host, or its scheme is not http or https): answered 400, never served.
   */
  ours: boolean;
}

// scheme "://" authority, then the path and query (RFC 9112 3.2.2, RFC 3986 3).
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;

/** host[:port] as a URL of `scheme` writes it (lower case, default port dropped); null when it is none. */
function hostOf(scheme: string, authority: string | undefined): string | null {
  // Userinfo is deprecated in http(s) URIs and a recipient should treat it as an error (RFC 9110 4.2.4).
  if (!authority || /[@/?#\\\s]/.test(authority)) return null;
  try {
    return new URL(`${scheme}://${authority}`).host;
  } catch {
    return null;
  }
}

/**
 * The origin-form of a request target (RFC 9112 3.2). An origin-form target, and anything that is
 * not an absolute URI, is kept as sent (the path rules judge it). An absolute-form target (a server
 * MUST accept it, 3.2.2) is this site's when its authority is the request's Host: this server
 * answers every Host it is reached by, and a client sends Host equal to the target's authority
 * (3.2), so such a request is the origin-form one it stands for. Any other authority is a request
 * meant for another server (a proxy's): not ours. Pure: the gateway decides the answer.
 */
export function requestTarget(target: string, host: string | undefined): RequestTarget {
  if (target.startsWith('/')) return { originForm: target, ours: true };
  const absolute = ABSOLUTE_FORM.exec(target);
  if (!absolute) return { originForm: target, ours: true };
  const [, scheme = '', authority = '', rest = ''] = absolute;
  const originForm = rest === '' ? '/' : rest.startsWith('/') ? rest : `/${rest}`;
  const web = /^https?$/i.test(scheme);
  const named = web ? hostOf(scheme, authority) : null;
  return { originForm, ours: named !== null && named === hostOf(scheme, host) };
}
