import {
  isSignatureError,
  SignatureErrorCode,
  verifySignature,
  type UntrustedSignatureCandidate,
  type Verifier,
} from 'http-message-sig';
import { HTTP_MESSAGE_SIGNATURE_TAG } from 'web-bot-auth';
import type { BotFamily } from '../../schemas/bot-families.ts';
import {
  createDirectoryCache,
  type DirectoryCacheOptions,
  type DirectoryFetchRecord,
  type KeyLookup,
} from './directory-cache.ts';
import type { DirectoryFetcher } from './directory-fetch.ts';
import { TEST_KEY_THUMBPRINTS } from './key-directory.ts';
import {
  agentMember,
  parseSignatureAgent,
  readDictionary,
  type AgentMember,
  type SignatureAgentHeader,
} from './signature-agent.ts';
import type { Outcome } from '../verification/verify.ts';

export { httpDirectoryFetcher, type DirectoryFetcher } from './directory-fetch.ts';

/**
 * What checking a Web Bot Auth signature found (draft appendix "Verifier Outcomes"): `verified`,
 * `invalid` (the signature, its covered components, its key or its freshness fail, or it was made
 * for another host), `unverified` (not enough to decide: no directory could be had, or it covers
 * what we cannot check) or `replayed` (a valid signature whose nonce its signer already used here).
 */
export type SignatureOutcome = 'verified' | 'invalid' | 'unverified' | 'replayed';

/** How an outcome is counted in the bot ledger: invalid or replayed is a failed claim, unverified an unverifiable one. */
export function ledgerOutcome(outcome: SignatureOutcome): Outcome {
  return outcome === 'verified' ? 'verified' : outcome === 'unverified' ? 'unverifiable' : 'failed';
}

/**
 * An authority (`Host`) as compared: lowercase, without the scheme's default port. The service's
 * own are SITE_URL's and SITE_ALIASES'.
 */
export function normalAuthority(authority: string, scheme = 'https:'): string {
  const lower = authority.trim().toLowerCase();
  const port = scheme === 'http:' ? ':80' : ':443';
  return lower.endsWith(port) ? lower.slice(0, -port.length) : lower;
}

/**
 * The authorities of the service's own URLs, as normalAuthority() writes them, each with its URL's
 * scheme: behind a proxy that ends TLS the request arrives without it, and `@target-uri` and
 * `@scheme` are signed as the client wrote them.
 */
export const authoritiesOf = (urls: string[]): ReadonlyMap<string, string> =>
  new Map(urls.map((u) => [normalAuthority(new URL(u).host, new URL(u).protocol), new URL(u).protocol]));

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

/** Web Bot Auth signatures of one request read at most. */
export const MAX_SIGNATURES = 8;
/** The longest created-to-expires window accepted (the draft recommends no more than 24 hours). */
export const MAX_SIGNATURE_WINDOW_S = 24 * 3600;
/** Clock difference allowed on `created` and `expires`. */
export const CLOCK_SKEW_S = 30;
/** Checks running at once at most; past it a signed claim counts as unverified at once. */
export const MAX_PENDING_CHECKS = 1000;

/** One web-bot-auth signature of a request, and a Signature-Agent member it covers (null when none). */
export interface WebBotAuthSignature {
  label: string;
  member: AgentMember | null;
  /** It covers a header the gateway does not keep, so it cannot be checked here. */
  coversOtherHeaders: boolean;
}

// The only fields the gateway keeps of a signed request.
const KEPT_FIELDS = new Set(['signature-agent', 'signature', 'signature-input']);

/**
 * The signatures tagged `web-bot-auth` in Signature-Input, once for each Signature-Agent member it
 * covers: `"signature-agent";key="m"` names member m of the dictionary form, a plain
 * `"signature-agent"` the legacy string. A signature is never attributed to a member it does not
 * cover. Null when Signature-Input cannot be read.
 */
export function webBotAuthSignatures(
  signatureInput: string,
  agents: SignatureAgentHeader | null,
): WebBotAuthSignature[] | null {
  return readDictionary<WebBotAuthSignature>(signatureInput, MAX_SIGNATURES, (label, [components, params]) => {
    if (!Array.isArray(components) || params.get('tag') !== HTTP_MESSAGE_SIGNATURE_TAG) return [];
    const members: AgentMember[] = [];
    let coversOtherHeaders = false;
    for (const [name, componentParams] of components) {
      if (typeof name !== 'string') continue;
      if (!name.startsWith('@') && !KEPT_FIELDS.has(name)) coversOtherHeaders = true;
      if (name !== 'signature-agent' || !agents) continue;
      const key = componentParams.get('key');
      const member =
        key === undefined && agents.form === 'legacy'
          ? agents.members[0]
          : typeof key === 'string' && agents.form === 'dictionary'
            ? agents.members.find((m) => m.label === key)
            : undefined;
      if (member) members.push(member);
    }
    // One entry per member it covers (an outer signature may cover another signer's member too).
    if (!members.length) return [{ label, member: null, coversOtherHeaders }];
    return members.map((member) => ({ label, member, coversOtherHeaders }));
  });
}

/** Looks up a key by (directory, keyid); `member` is null for a signature that names no directory. */
export type KeyResolver = (member: AgentMember | null, keyid: string) => Promise<KeyLookup>;

export interface VerifyOptions {
  /** Which signature to check, by the member it covers; the first web-bot-auth signature by default. */
  select?: (member: AgentMember | null) => boolean;
  /** Seconds since the epoch; the clock by default. */
  now?: number;
  maxWindowS?: number;
  /** Only the draft's test vectors set this. */
  allowTestKeys?: boolean;
  /**
   * The service's own authorities (normalAuthority): a request whose Host is none of them does not
   * verify, as its `@authority` would be another site's. Every authority when left out (the draft's vectors).
   */
  authorities?: ReadonlyMap<string, string>;
}

/** The outcome, why, and which signature and directory it was about. */
export interface SignatureCheck {
  outcome: SignatureOutcome;
  reason: string;
  label?: string;
  member?: AgentMember | null;
  /** The checked signature's `nonce` (when it has one), `created` and `expires`, for replay detection. */
  nonce?: string;
  created?: number;
  expires?: number;
}

class Refusal extends Error {
  readonly outcome: Exclude<SignatureOutcome, 'verified'>;
  constructor(outcome: Exclude<SignatureOutcome, 'verified'>, message: string) {
    super(message);
    this.outcome = outcome;
  }
}

/** The outcome of a failed verification: what our resolver decided, or what the library found. */
function outcomeOfError(error: unknown): SignatureCheck {
  if (error instanceof Refusal) return { outcome: error.outcome, reason: error.message };
  if (isSignatureError(error)) {
    if (error.code === SignatureErrorCode.ResolverFailed) return outcomeOfError(error.cause);
    // An RFC 9421 feature the library does not read (@query-param, RFC 9651 values): we cannot decide.
    if (error.code === SignatureErrorCode.UnsupportedFeature) return { outcome: 'unverified', reason: error.message };
    return { outcome: 'invalid', reason: error.message };
  }
  return { outcome: 'unverified', reason: error instanceof Error ? error.message : String(error) };
}

/**
 * Verifies a request's Web Bot Auth signature as the working-group draft says: tagged
 * `web-bot-auth`; covering `@authority` or `@target-uri`, and the Signature-Agent member it is
 * attributed to; `created`, `expires` (within 24 hours of each other, the clock within 30 s) and a
 * `keyid` that is the thumbprint of a key the member's directory lists, not a known test key, and
 * within the key's own `nbf`/`exp`. Never throws.
 */
export async function verifySignedRequest(
  r: SignedRequest,
  resolveKey: KeyResolver,
  o: VerifyOptions = {},
): Promise<SignatureCheck> {
  const agents = r.signatureAgent === undefined ? null : parseSignatureAgent(r.signatureAgent);
  const signatures = webBotAuthSignatures(r.signatureInput, agents);
  if (!signatures) return { outcome: 'invalid', reason: 'Signature-Input is not a dictionary' };
  const chosen = signatures.find((s) => (o.select ?? (() => true))(s.member));
  if (!chosen) return { outcome: 'invalid', reason: 'no web-bot-auth signature covers the agent' };
  const about = { label: chosen.label, member: chosen.member };
  if (chosen.coversOtherHeaders)
    return { outcome: 'unverified', reason: 'covers a header the gateway does not keep', ...about };
  const scheme = o.authorities
    ? (o.authorities.get(normalAuthority(r.authority)) ?? o.authorities.get(r.authority.toLowerCase()))
    : 'https:';
  if (scheme === undefined) return { outcome: 'invalid', reason: 'sent to a host that is not this service', ...about };
  const now = o.now ?? Math.floor(Date.now() / 1000);
  const maxWindow = o.maxWindowS ?? MAX_SIGNATURE_WINDOW_S;
  const freshness: { nonce?: string; created?: number; expires?: number } = {};

  async function resolveVerifier(candidate: UntrustedSignatureCandidate): Promise<Verifier> {
    const names = new Set(candidate.components.map((c) => c.name));
    if (!names.has('@authority') && !names.has('@target-uri'))
      throw new Refusal('invalid', 'covers neither @authority nor @target-uri');
    const { created, expires, keyid } = candidate.parameters;
    if (typeof created !== 'number' || typeof expires !== 'number' || typeof keyid !== 'string')
      throw new Refusal('invalid', 'created, expires and keyid must be given');
    if (expires <= created) throw new Refusal('invalid', 'expires is not after created');
    if (expires - created > maxWindow) throw new Refusal('invalid', `valid for more than ${maxWindow} s`);
    freshness.created = created;
    freshness.expires = expires;
    if (typeof candidate.parameters.nonce === 'string') freshness.nonce = candidate.parameters.nonce;
    if (TEST_KEY_THUMBPRINTS.has(keyid) && !o.allowTestKeys)
      throw new Refusal('invalid', 'signed with a published test key');
    const found = await resolveKey(chosen!.member, keyid);
    if (found.status === 'unavailable') throw new Refusal('unverified', 'no key directory to check against');
    if (found.status === 'absent') throw new Refusal('invalid', 'the directory does not list this key');
    if (
      (found.key.notBefore !== undefined && now < found.key.notBefore) ||
      (found.key.notAfter !== undefined && now > found.key.notAfter)
    ) {
      throw new Refusal('invalid', 'the key is outside its nbf/exp');
    }
    return found.key.verifier;
  }

  const fields = [
    { name: 'signature', value: r.signature },
    { name: 'signature-input', value: r.signatureInput },
    ...(r.signatureAgent === undefined ? [] : [{ name: 'signature-agent', value: r.signatureAgent }]),
  ];
  try {
    await verifySignature(
      { kind: 'request', method: r.method, targetUri: `${scheme}//${r.authority}${r.target}`, fields },
      {
        label: chosen.label,
        policy: {
          algorithms: ['ed25519', 'rsa-pss-sha512'],
          requiredComponents: [],
          requiredParameters: ['created', 'expires', 'keyid', 'tag'],
          now,
          clockSkew: CLOCK_SKEW_S,
        },
        resolveVerifier,
      },
    );
    return { outcome: 'verified', reason: 'verified', ...about, ...freshness };
  } catch (error) {
    return { ...outcomeOfError(error), ...about };
  }
}

export interface SignatureVerifierOptions {
  families: BotFamily[];
  fetchDirectory: DirectoryFetcher;
  /** Called when a check started by `check` has its answer. */
  /** A check's answer, with the `tag` its check() was given. */
  onResult: (family: string, outcome: SignatureOutcome, tag: unknown) => void;
  /** The service's own authorities (authoritiesOf SITE_URL and SITE_ALIASES); any Host when left out (tests of the format). */
  authorities?: ReadonlyMap<string, string>;
  /** Told of every directory fetch (logged at debug, counted in /metrics). */
  onFetch?: (fetch: DirectoryFetchRecord) => void;
  /** Checks under way at most; beyond it a signed claim counts as unverified at once. */
  maxPending?: number;
  /** Nonces remembered per signer at most (NONCES_PER_SIGNER by default). */
  maxNonces?: number;
  /**
   * Claims a nonce this process has not seen on the memory every process shares (the PostgreSQL
   * store's `claimNonce`): true for the first use anywhere. None: this process's memory decides alone.
   */
  claimNonce?: (signer: string, nonce: string, expiresAt: number) => Promise<boolean>;
  /** Told of every claim that failed or was not answered in time (its signature counted unverified). */
  onClaimFailure?: (error: unknown) => void;
  /**
   * From when this memory of nonces knows every use, in seconds (0, the default: always). Without
   * `claimNonce`, a nonce'd signature created before it may have been used by the process before a
   * restart: it counts unverified, never verified.
   */
  nonceMemorySince?: number;
  /** The directory cache's clock, jitter and sizes (tests). */
  directories?: Omit<DirectoryCacheOptions, 'fetch' | 'onFetch'>;
}

/** Nonces of verified signatures remembered per signer (family), each until its signature expires. */
export const NONCES_PER_SIGNER = 50_000;

/**
 * The directories a family registers (`signature_agents:`), as `type fetchUrl`: an origin is its
 * well-known directory, any other URL a JWK Set or a Client ID Metadata Document at that very URL.
 * Only these are ever fetched.
 */
function registeredDirectories(f: BotFamily): string[] {
  return (f.signature_agents ?? []).flatMap((agent) => {
    const types = new URL(agent).pathname === '/' ? (['directory'] as const) : (['jwks_uri', 'cimd'] as const);
    return types.flatMap((type) => {
      const member = agentMember(null, agent, type);
      return member ? [directoryKey(member)] : [];
    });
  });
}
const directoryKey = (m: Pick<AgentMember, 'type' | 'fetchUrl'>) => `${m.type} ${m.fetchUrl}`;

/**
 * Web Bot Auth for the families whose operators sign their requests. A Signature-Agent member on
 * an origin a family registers in `content/bot-families.yaml` claims that family; its keys are
 * fetched only from a URL the family registers (any other member is unverifiable, with no fetch),
 * so a client cannot make the service fetch a URL of its choosing, and each registered directory
 * has its own cache slot and fetch budget, which no flood of other URLs, keyids or signers can
 * evict or spend. A signature verifies only for the service's own authorities, and a signature
 * with a nonce once: the nonce is remembered per signer until it expires, by this process and,
 * given `claimNonce`, by every process that shares the store. Each signature is checked in the
 * background; every fetch is guarded (https, public addresses, bounded).
 */
export function createSignatureVerifier(o: SignatureVerifierOptions) {
  const byOrigin = new Map<string, BotFamily>();
  const registered = new Set<string>();
  for (const f of o.families) {
    for (const agent of f.signature_agents ?? []) byOrigin.set(new URL(agent).origin, f);
    for (const key of registeredDirectories(f)) registered.add(key);
  }
  const directories = createDirectoryCache({
    ...o.directories,
    // One slot for every registered directory: none is ever evicted.
    maxEntries: Math.max(registered.size, 1),
    fetch: o.fetchDirectory,
    onFetch: o.onFetch,
  });
  const maxPending = o.maxPending ?? MAX_PENDING_CHECKS;
  const maxNonces = o.maxNonces ?? NONCES_PER_SIGNER;
  const memorySince = o.nonceMemorySince ?? 0;
  // Per signer: nonce -> when its signature expires, in seconds.
  const nonces = new Map<string, Map<string, number>>();
  const counts = { replays: 0, unregistered: 0, nonceClaimFailures: 0 };
  let pending = 0;
  const resolveKey: KeyResolver = (member, keyid) => {
    if (!member) return Promise.resolve({ status: 'unavailable' });
    if (!registered.has(directoryKey(member))) {
      counts.unregistered++;
      return Promise.resolve({ status: 'unavailable' });
    }
    return directories.lookup(member, keyid);
  };
  const clock = () => Math.floor((o.directories?.now ?? Date.now)() / 1000);

  /**
   * A verified signature's first use, or a replay of it, as this process remembers. Remembered until
   * it expires; a signer whose memory is full of unexpired nonces gets `unverified` (never a replay
   * taken as verified).
   */
  function firstLocalUse(family: string, id: string, expires: number): SignatureOutcome {
    let seen = nonces.get(family);
    if (!seen) nonces.set(family, (seen = new Map()));
    const now = clock();
    const until = seen.get(id);
    if (until !== undefined && until + CLOCK_SKEW_S >= now) {
      counts.replays++;
      return 'replayed';
    }
    if (seen.size >= maxNonces) for (const [n, at] of seen) if (at + CLOCK_SKEW_S < now) seen.delete(n);
    if (seen.size >= maxNonces) return 'unverified';
    seen.set(id, expires);
    return 'verified';
  }

  /**
   * A verified signature's first use in every process: first here (a replay here needs no round
   * trip, and the memory's cap holds), then claimed on the shared memory. A claim that fails or is
   * not answered within the store's bounds is `unverified`, never `verified` unchecked.
   */
  async function firstUse(family: string, id: string, created: number, expires: number): Promise<SignatureOutcome> {
    // Made before this memory began, and no shared memory to ask: the process before a restart may
    // have seen it (the embedded store keeps no nonces).
    if (!o.claimNonce && created < memorySince) return 'unverified';
    const local = firstLocalUse(family, id, expires);
    if (local !== 'verified' || !o.claimNonce) return local;
    try {
      if (await o.claimNonce(family, id, expires + CLOCK_SKEW_S)) return 'verified';
      counts.replays++;
      return 'replayed';
    } catch (error) {
      counts.nonceClaimFailures++;
      o.onClaimFailure?.(error);
      return 'unverified';
    }
  }

  return {
    /** The registered family a Signature-Agent header speaks for, if any: that of its first member on a registered origin. */
    familyOf(signatureAgent: string | undefined): BotFamily | null {
      const agents = signatureAgent === undefined ? null : parseSignatureAgent(signatureAgent);
      for (const member of agents?.members ?? []) {
        const family = byOrigin.get(member.origin);
        if (family) return family;
      }
      return null;
    },
    /**
     * Starts checking a signed request that claims `family`; null while it runs (onResult answers,
     * with `tag`), 'unverified' when too many run.
     */
    check(family: BotFamily, r: SignedRequest, tag?: unknown): SignatureOutcome | null {
      if (pending >= maxPending) return 'unverified';
      pending++;
      void verifySignedRequest(r, resolveKey, {
        select: (member) => member !== null && byOrigin.get(member.origin) === family,
        now: clock(),
        ...(o.authorities ? { authorities: o.authorities } : {}),
      }).then(async (result) => {
        // Without a nonce, two requests of one second may carry the very same signature (it need cover
        // no path): only a nonce tells a replay from the signer's next request.
        const outcome =
          result.outcome === 'verified' && result.nonce !== undefined
            ? await firstUse(family.family, result.nonce, result.created ?? 0, result.expires ?? clock())
            : result.outcome;
        // A check waiting for its claim is still running: MAX_PENDING_CHECKS bounds claims too.
        pending--;
        o.onResult(family.family, outcome, tag);
      });
      return null;
    },
    /** Directory fetches started so far (tests, metrics). */
    directoryFetches: () => directories.fetches(),
    /**
     * Replayed signatures seen (here or by another process), members naming a directory no family
     * registers (never fetched), and nonces the shared memory did not claim in time.
     */
    stats: () => ({ ...counts, directoryFetches: directories.fetches() }),
  };
}
export type SignatureVerifier = ReturnType<typeof createSignatureVerifier>;
