import { parseDictionary, parseItem, Token, type InnerList, type Item } from 'structured-headers';
import { HTTP_MESSAGE_SIGNATURES_DIRECTORY } from 'web-bot-auth';

/**
 * How a Signature-Agent member says its keys are found (draft-ietf-webbotauth-httpsig-protocol-00
 * §5.5): `directory` (the default) is an origin whose well-known directory lists them, `jwks_uri`
 * a JWK Set at that very URL, `cimd` a Client ID Metadata Document that holds or points to one.
 */
export type DiscoveryType = 'directory' | 'jwks_uri' | 'cimd';

/** One member of Signature-Agent: where the keys of the signature that covers it are found. */
export interface AgentMember {
  /** The dictionary key (`sig1` in `sig1="https://..."`); null for the legacy bare-string form. */
  label: string | null;
  type: DiscoveryType;
  /** The URL the verifier fetches. */
  fetchUrl: string;
  /** The identifier: the fetched URL without query or fragment, normalised; keys are looked up by (identifier, keyid). */
  identifier: string;
  /** Its origin, which is what a family registers (`signature_agents:`). */
  origin: string;
}

/** The Signature-Agent header as read: the draft's dictionary, or the earlier drafts' bare string. */
export interface SignatureAgentHeader {
  form: 'dictionary' | 'legacy';
  members: AgentMember[];
}

/** Members read at most: a header naming more agents than this is not read past them. */
export const MAX_AGENT_MEMBERS = 8;
/**
 * Longest Signature-Agent and Signature-Input read: MAX_AGENT_MEMBERS URLs of a hundred or so
 * characters. A longer one (15 KB cost 0.6 ms to parse) is not parsed: its signature covers no agent.
 */
export const SIGNATURE_HEADER_MAX_CHARS = 1024;

const TYPES = new Set<string>(['directory', 'jwks_uri', 'cimd']);

/**
 * A member value as an AgentMember, or null when it cannot be one: not an http(s) URL (https is
 * enforced where it is fetched, so tests can serve loopback over http), a credential in it, an
 * unknown `type`, or a `directory` that names a path (the default type is an origin; a bare `/`
 * and, from the earlier drafts, the well-known path itself are accepted).
 */
export function agentMember(label: string | null, value: string, type: DiscoveryType): AgentMember | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) return null;
  url.hash = '';
  if (type === 'directory') {
    if (url.pathname !== '/' && url.pathname !== HTTP_MESSAGE_SIGNATURES_DIRECTORY) return null;
    url.pathname = HTTP_MESSAGE_SIGNATURES_DIRECTORY;
    url.search = '';
  }
  const fetchUrl = url.href;
  url.search = '';
  return { label, type, fetchUrl, identifier: url.href, origin: url.origin };
}

/**
 * Reads Signature-Agent. The dictionary form is the draft's: each member a String holding a URL,
 * with an optional `type` token; a member that is not a String, not a URL or of an unknown type is
 * skipped. A bare String is the earlier drafts' form: one `directory` member with no label, which a
 * signature covers as plain `"signature-agent"`. Null when the header is neither.
 */
export function parseSignatureAgent(header: string): SignatureAgentHeader | null {
  if (header.length > SIGNATURE_HEADER_MAX_CHARS) return null;
  // A String Item starts with a quote; a Dictionary member key cannot (RFC 9651), so the forms never overlap.
  if (header.trimStart().startsWith('"')) {
    try {
      const [value] = parseItem(header);
      if (typeof value !== 'string') return null;
      const member = agentMember(null, value, 'directory');
      return member ? { form: 'legacy', members: [member] } : null;
    } catch {
      return null;
    }
  }
  const members = readDictionary(header, MAX_AGENT_MEMBERS, (label, [value, params]) => {
    if (typeof value !== 'string') return [];
    const type = params.get('type') ?? 'directory';
    const name = type instanceof Token ? type.toString() : type;
    if (typeof name !== 'string' || !TYPES.has(name)) return [];
    const member = agentMember(label, value, name as DiscoveryType);
    return member ? [member] : [];
  });
  return members?.length ? { form: 'dictionary', members } : null;
}

/**
 * A Structured Field Dictionary header (RFC 9651) read member by member: `read` turns a member into
 * values (none to skip it), and no member is read once `max` values were taken. Null when the header
 * is no dictionary. Signature-Agent and Signature-Input are both read this way.
 */
export function readDictionary<T>(
  header: string,
  max: number,
  read: (key: string, member: Item | InnerList) => readonly T[],
): T[] | null {
  if (header.length > SIGNATURE_HEADER_MAX_CHARS) return null;
  let dictionary;
  try {
    dictionary = parseDictionary(header);
  } catch {
    return null;
  }
  const values: T[] = [];
  for (const [key, member] of dictionary) {
    if (values.length >= max) break;
    values.push(...read(key, member));
  }
  return values;
}
