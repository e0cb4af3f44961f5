import { webcrypto, type Verifier } from 'http-message-sig';
import { helpers, jwkToKeyID, MediaType } from 'web-bot-auth';
import type { DiscoveryType } from './signature-agent.ts';

/**
 * Thumbprints (RFC 7638) of published test keys, which must never verify a real claim (draft
 * §6.8 "Test and Demonstration Keys"): RFC 9421's Ed25519 key (appendix B.1.4) and RSA-PSS key
 * (B.1.2), the keys of the draft's examples, which Cloudflare also publishes as its test keys
 * (`cloudflare/web-bot-auth`, `examples/rfc9421-keys/`) and uses on its demonstration server.
 */
export const TEST_KEY_THUMBPRINTS: ReadonlySet<string> = new Set([
  'poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U',
  'oD0HwocPBSfpNy5W3bpJeyFGY_IQ_YpqxSjQ3Yd-CLA',
]);

/** Keys one directory may list; a directory with more is refused whole (the draft's key-count bound). */
export const MAX_DIRECTORY_KEYS = 32;

/** A key a directory lists, ready to verify with, and the window its JWK gives it (`nbf`, `exp`, in seconds). */
export interface DirectoryKey {
  verifier: Verifier;
  notBefore?: number | undefined;
  notAfter?: number | undefined;
}

/** A directory's keys by thumbprint, and how many keys it listed that we refused. */
export interface KeySet {
  keys: Map<string, DirectoryKey>;
  refused: { testKeys: number; unusable: number };
}

/** Why a fetched document gives no key set: the fetch counts as failed and evicts nothing. */
export class DirectoryError extends Error {
  override name = 'DirectoryError';
}

const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json$/;

/** The media type of a response without its parameters, lower case. */
const mediaTypeOf = (contentType: string | undefined) => (contentType ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * Whether a response's Content-Type is one the discovery type may be served with: the well-known
 * directory MUST be `application/http-message-signatures-directory+json`; a JWK Set or a metadata
 * document at another URL is read when it is JSON of any kind.
 */
export function acceptableMediaType(type: DiscoveryType, contentType: string | undefined): boolean {
  const media = mediaTypeOf(contentType);
  return type === 'directory' ? media === MediaType.HTTP_MESSAGE_SIGNATURES_DIRECTORY : JSON_TYPE.test(media);
}

/** The Accept header of a fetch of that type. */
export function acceptFor(type: DiscoveryType): string {
  if (type === 'directory') return MediaType.HTTP_MESSAGE_SIGNATURES_DIRECTORY;
  return type === 'jwks_uri' ? 'application/jwk-set+json, application/json' : 'application/json';
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const seconds = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The public key of a JWK as a verifier: Ed25519, or RSA-PSS with SHA-512 (the algorithms Web Bot Auth signs with); null for anything else. */
async function importKey(jwk: Record<string, unknown>): Promise<{ verifier: Verifier; publicJwk: JsonWebKey } | null> {
  if ('d' in jwk) return null; // a published private key signs for anyone
  if (jwk.use !== undefined && jwk.use !== 'sig') return null;
  let publicJwk: JsonWebKey;
  let algorithm: RsaHashedImportParams | Algorithm;
  if (
    jwk.kty === 'OKP' &&
    jwk.crv === 'Ed25519' &&
    typeof jwk.x === 'string' &&
    (jwk.alg === undefined || jwk.alg === 'EdDSA' || jwk.alg === 'Ed25519')
  ) {
    publicJwk = { kty: 'OKP', crv: 'Ed25519', x: jwk.x };
    algorithm = { name: 'Ed25519' };
  } else if (
    jwk.kty === 'RSA' &&
    typeof jwk.n === 'string' &&
    typeof jwk.e === 'string' &&
    (jwk.alg === undefined || jwk.alg === 'PS512')
  ) {
    publicJwk = { kty: 'RSA', n: jwk.n, e: jwk.e };
    algorithm = { name: 'RSA-PSS', hash: 'SHA-512' };
  } else {
    return null;
  }
  try {
    const key = await crypto.subtle.importKey('jwk', publicJwk, algorithm, true, ['verify']);
    return { verifier: webcrypto.verifier(key), publicJwk };
  } catch {
    return null;
  }
}

/**
 * The keys of a JWK Set, by thumbprint (the `keyid` a signature names). Keys we cannot use, known
 * test keys and, at a well-known directory, keys whose `kid` is not their thumbprint are left out
 * and counted; a document that is not a JWK Set, or lists more than `maxKeys`, is refused.
 */
export async function keySetOf(
  document: unknown,
  o: { kidIsThumbprint: boolean; allowTestKeys?: boolean; maxKeys?: number },
): Promise<KeySet> {
  if (!isRecord(document) || !Array.isArray(document.keys)) throw new DirectoryError('not a JWK Set');
  if (document.keys.length > (o.maxKeys ?? MAX_DIRECTORY_KEYS))
    throw new DirectoryError(`more than ${o.maxKeys ?? MAX_DIRECTORY_KEYS} keys`);
  const set: KeySet = { keys: new Map(), refused: { testKeys: 0, unusable: 0 } };
  for (const jwk of document.keys) {
    const imported = isRecord(jwk) ? await importKey(jwk) : null;
    if (!imported) {
      set.refused.unusable++;
      continue;
    }
    const thumbprint = await jwkToKeyID(imported.publicJwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE);
    const record = jwk as Record<string, unknown>;
    if (o.kidIsThumbprint && record.kid !== undefined && record.kid !== thumbprint) {
      set.refused.unusable++;
    } else if (TEST_KEY_THUMBPRINTS.has(thumbprint) && !o.allowTestKeys) {
      set.refused.testKeys++;
    } else {
      set.keys.set(thumbprint, {
        verifier: imported.verifier,
        notBefore: seconds(record.nbf),
        notAfter: seconds(record.exp),
      });
    }
  }
  return set;
}

/**
 * Where a Client ID Metadata Document keeps its keys: inline (`jwks`) or at `jwks_uri`, never both.
 * Its `client_id` must be the URL it was fetched from.
 */
export function cimdKeys(document: unknown, fetchedFrom: string): { jwks: unknown } | { jwksUri: string } {
  if (!isRecord(document)) throw new DirectoryError('not a metadata document');
  if (document.client_id !== fetchedFrom) throw new DirectoryError('client_id is not the URL of the document');
  const hasJwks = document.jwks !== undefined;
  const hasUri = document.jwks_uri !== undefined;
  if (hasJwks === hasUri) throw new DirectoryError('a metadata document needs exactly one of jwks and jwks_uri');
  if (hasJwks) return { jwks: document.jwks };
  if (typeof document.jwks_uri !== 'string' || !URL.canParse(document.jwks_uri))
    throw new DirectoryError('jwks_uri is not a URL');
  return { jwksUri: document.jwks_uri };
}
