import { LRUCache } from 'lru-cache';
import { parseDictionary, parseItem, type Dictionary } from 'structured-headers';
import { helpers, HTTP_MESSAGE_SIGNATURE_TAG, HTTP_MESSAGE_SIGNATURES_DIRECTORY, jwkToKeyID, verify } from 'web-bot-auth';
import { verifierFromJWK } from 'web-bot-auth/crypto';
import type { BotFamily } from '../schemas/bot-families.ts';
/** What checking a signature found. */
export type Verdict = 'verified' | 'unverified';

/** The parts of a request that Web Bot Auth (HTTP Message Signatures, RFC 9421) signs. */
export interface SignedRequest {
  method: string;
  /** The Host the client sent: `@authority`. */
  authority: string;
  /** The request target as sent: path and query. */
  target: string;
  signature: string;
  signatureInput: string;
  /** The Signature-Agent header, when sent. */
  signatureAgent?: string | undefined;
}

/** Keys of one signature agent's directory, by JWK thumbprint (the keyid a signature names). */
export type KeyDirectory = Map<string, JsonWebKey>;

/** Fetches an agent's key directory (`/.well-known/http-message-signatures-directory`). */
export type DirectoryFetcher = (origin: string) => Promise<KeyDirectory>;

const originOf = (url: string): string | null => {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : null;
  } catch {
    return null;
  }
};

/**
 * The agent a request names in Signature-Agent, as an origin. The draft's dictionary form
 * (`sig1="https://agent.example"`) and its earlier plain-string form are both read.
 */
export function signatureAgentOrigin(header: string): string | null {
  try {
    const [value] = parseItem(header);
    if (typeof value === 'string') return originOf(value);
  } catch {
    // Not a single item: try the dictionary form below.
  }
  try {
    for (const [value] of parseDictionary(header).values()) if (typeof value === 'string') return originOf(value);
  } catch {
    // Not a structured field at all.
  }
  return null;
}

/**
 * True when the request's web-bot-auth signature covers `@authority` (or it could be replayed
 * against any site) and, when the request names its agent, `signature-agent` (or the agent could
 * be swapped).
 */
function coversWhatItMust(input: Dictionary, hasAgent: boolean): boolean {
  for (const [components, params] of input.values()) {
    if (params.get('tag') !== HTTP_MESSAGE_SIGNATURE_TAG || !Array.isArray(components)) continue;
    const names = new Set(components.map(([name]) => name));
    return names.has('@authority') && (!hasAgent || names.has('signature-agent'));
  }
  return false;
}

// A key is imported once per directory fetch, not once per signature.
const verifiers = new WeakMap<JsonWebKey, ReturnType<typeof verifierFromJWK>>();
const verifierOf = (jwk: JsonWebKey) => {
  let verifier = verifiers.get(jwk);
  if (!verifier) verifiers.set(jwk, (verifier = verifierFromJWK(jwk)));
  return verifier;
};

/**
 * Verifies a signed request against its agent's directory: the signature must be a web-bot-auth
 * one, cover the authority and the agent, be within its created/expires window, and be made by a
 * key the directory lists. Any failure is 'unverified', never an error.
 */
export async function verifySignedRequest(r: SignedRequest, keys: KeyDirectory): Promise<Verdict> {
  try {
    if (!coversWhatItMust(parseDictionary(r.signatureInput), r.signatureAgent !== undefined)) return 'unverified';
    const headers: Record<string, string> = { signature: r.signature, 'signature-input': r.signatureInput };
    if (r.signatureAgent !== undefined) headers['signature-agent'] = r.signatureAgent;
    await verify({ method: r.method, url: `https://${r.authority}${r.target}`, headers }, async (data, signature, params) => {
      const jwk = keys.get(params.keyid);
      if (!jwk) throw new Error('unknown key');
      await (await verifierOf(jwk))(data, signature, params);
    });
    return 'verified';
  } catch {
    return 'unverified';
  }
}

/** A directory's keys by thumbprint; keys that are not JWKs are left out. */
export async function keyDirectory(keys: unknown): Promise<KeyDirectory> {
  const directory: KeyDirectory = new Map();
  if (!Array.isArray(keys)) return directory;
  for (const jwk of keys as JsonWebKey[]) {
    try {
      directory.set(await jwkToKeyID(jwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE), jwk);
    } catch {
      // A key we cannot read cannot sign anything we accept.
    }
  }
  return directory;
}

/** The directory over HTTP, bounded in time and size. */
export function httpDirectoryFetcher(timeoutMs = 2000, maxBytes = 64 * 1024): DirectoryFetcher {
  return async (origin) => {
    const res = await fetch(new URL(HTTP_MESSAGE_SIGNATURES_DIRECTORY, origin), { signal: AbortSignal.timeout(timeoutMs), redirect: 'error', headers: { accept: 'application/http-message-signatures-directory+json, application/json' } });
    if (!res.ok || !res.body) throw new Error(`directory answered ${res.status}`);
    // Read no more than maxBytes, whatever Content-Length says.
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += chunk.byteLength;
      if (size > maxBytes) throw new Error('directory too large');
      chunks.push(chunk);
    }
    return keyDirectory((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { keys?: unknown }).keys);
  };
}

const FAILURE_TTL_MS = 5 * 60_000;

export interface SignatureVerifierOptions {
  families: BotFamily[];
  fetchDirectory: DirectoryFetcher;
  /** Called when a check started by `check` has its answer. */
  onResult: (family: string, verdict: Verdict) => void;
  /** Checks under way at most; beyond it a signed claim counts as unverified at once. */
  maxPending?: number;
  /** How long a directory (or a failure to fetch it) is remembered. */
  directoryTtlMs?: number;
}

/**
 * Web Bot Auth for the families whose operators sign their requests. Only the agents registered in
 * `content/bot-families.yaml` are ever fetched, so a client cannot make the service fetch a URL of
 * its choosing. Directories are cached per agent; each signature is checked in the background.
 */
export function createSignatureVerifier(o: SignatureVerifierOptions) {
  const byAgent = new Map<string, BotFamily>();
  for (const f of o.families) for (const agent of f.signature_agents ?? []) byAgent.set(new URL(agent).origin, f);
  const directories = new LRUCache<string, Promise<KeyDirectory>>({ max: 1000, ttl: o.directoryTtlMs ?? 3_600_000 });
  const maxPending = o.maxPending ?? 1000;
  let pending = 0;

  function directory(origin: string): Promise<KeyDirectory> {
    let keys = directories.get(origin);
    if (!keys) {
      // A failed fetch is remembered too, for a few minutes, so a dead agent is not hammered.
      keys = o.fetchDirectory(origin).catch(() => {
        const none: KeyDirectory = new Map();
        directories.set(origin, Promise.resolve(none), { ttl: FAILURE_TTL_MS });
        return none;
      });
      directories.set(origin, keys);
    }
    return keys;
  }

  return {
    /** The registered family a Signature-Agent header speaks for, if any. */
    familyOf(signatureAgent: string | undefined): BotFamily | null {
      const origin = signatureAgent === undefined ? null : signatureAgentOrigin(signatureAgent);
      return origin === null ? null : (byAgent.get(origin) ?? null);
    },
    /** Starts checking a signed request that claims `family`; null while it runs, 'unverified' when too many run. */
    check(family: BotFamily, r: SignedRequest): Verdict | null {
      const origin = r.signatureAgent === undefined ? null : signatureAgentOrigin(r.signatureAgent);
      if (origin === null || byAgent.get(origin) !== family || pending >= maxPending) return 'unverified';
      pending++;
      void directory(origin)
        .then((keys) => verifySignedRequest(r, keys))
        .then((verdict) => {
          pending--;
          o.onResult(family.family, verdict);
        });
      return null;
    },
  };
}
export type SignatureVerifier = ReturnType<typeof createSignatureVerifier>;
