import {
  isSignatureError,
  SignatureErrorCode,
  verifySignature,
  type UntrustedSignatureCandidate,
  type Verifier,
} from 'http-message-sig';
import { parseDictionary } from 'structured-headers';
import { HTTP_MESSAGE_SIGNATURE_TAG } from 'web-bot-auth';
import type { BotFamily } from '../../schemas/bot-families.ts';
import { createDirectoryCache, type DirectoryCacheOptions, type KeyLookup } from './directory-cache.ts';
import type { DirectoryFetcher } from './directory-fetch.ts';
import { TEST_KEY_THUMBPRINTS } from './key-directory.ts';
import {
  parseSignatureAgent,
  SIGNATURE_HEADER_MAX_CHARS,
  type AgentMember,
  type SignatureAgentHeader,
} from './signature-agent.ts';
import type { Outcome } from '../verification/verify.ts';

export { httpDirectoryFetcher, type DirectoryFetcher } from './directory-fetch.ts';

/**
 * What checking a Web Bot Auth signature found (draft appendix "Verifier Outcomes"): `verified`,
 * `invalid` (the signature, its covered components, its key or its freshness fail) or
 * `unverified` (not enough to decide: no directory could be had, or it covers what we cannot check).
 */
export type SignatureOutcome = 'verified' | 'invalid' | 'unverified';

/** How an outcome is counted in the bot ledger: invalid is a failed claim, unverified an unverifiable one. */
export function ledgerOutcome(outcome: SignatureOutcome): Outcome {
  return outcome === 'verified' ? 'verified' : outcome === 'invalid' ? 'failed' : 'unverifiable';
}

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
  let inputs;
  if (signatureInput.length > SIGNATURE_HEADER_MAX_CHARS) return null;
  try {
    inputs = parseDictionary(signatureInput);
  } catch {
    return null;
  }
  const found: WebBotAuthSignature[] = [];
  for (const [label, [components, params]] of inputs) {
    if (found.length >= MAX_SIGNATURES) break;
    if (!Array.isArray(components) || params.get('tag') !== HTTP_MESSAGE_SIGNATURE_TAG) continue;
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
    if (!members.length) found.push({ label, member: null, coversOtherHeaders });
    for (const member of members) found.push({ label, member, coversOtherHeaders });
  }
  return found;
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
}

/** The outcome, why, and which signature and directory it was about. */
export interface SignatureCheck {
  outcome: SignatureOutcome;
  reason: string;
  label?: string;
  member?: AgentMember | null;
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
  const now = o.now ?? Math.floor(Date.now() / 1000);
  const maxWindow = o.maxWindowS ?? MAX_SIGNATURE_WINDOW_S;

  async function resolveVerifier(candidate: UntrustedSignatureCandidate): Promise<Verifier> {
    const names = new Set(candidate.components.map((c) => c.name));
    if (!names.has('@authority') && !names.has('@target-uri'))
      throw new Refusal('invalid', 'covers neither @authority nor @target-uri');
    const { created, expires, keyid } = candidate.parameters;
    if (typeof created !== 'number' || typeof expires !== 'number' || typeof keyid !== 'string')
      throw new Refusal('invalid', 'created, expires and keyid must be given');
    if (expires - created > maxWindow) throw new Refusal('invalid', `valid for more than ${maxWindow} s`);
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
      { kind: 'request', method: r.method, targetUri: `https://${r.authority}${r.target}`, fields },
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
    return { outcome: 'verified', reason: 'verified', ...about };
  } catch (error) {
    return { ...outcomeOfError(error), ...about };
  }
}

export interface SignatureVerifierOptions {
  families: BotFamily[];
  fetchDirectory: DirectoryFetcher;
  /** Called when a check started by `check` has its answer. */
  onResult: (family: string, outcome: SignatureOutcome) => void;
  /** Checks under way at most; beyond it a signed claim counts as unverified at once. */
  maxPending?: number;
  /** The directory cache's clock, jitter and sizes (tests). */
  directories?: Omit<DirectoryCacheOptions, 'fetch'>;
}

/**
 * Web Bot Auth for the families whose operators sign their requests. Only Signature-Agent members
 * on an origin a family registers in `content/bot-families.yaml` are ever fetched, so a client
 * cannot make the service fetch a host of its choosing; every fetch is also guarded (https, public
 * addresses, bounded). Each signature is checked in the background.
 */
export function createSignatureVerifier(o: SignatureVerifierOptions) {
  const byOrigin = new Map<string, BotFamily>();
  for (const f of o.families) for (const agent of f.signature_agents ?? []) byOrigin.set(new URL(agent).origin, f);
  const directories = createDirectoryCache({ ...o.directories, fetch: o.fetchDirectory });
  const maxPending = o.maxPending ?? MAX_PENDING_CHECKS;
  let pending = 0;
  const resolveKey: KeyResolver = (member, keyid) =>
    member ? directories.lookup(member, keyid) : Promise.resolve({ status: 'unavailable' });

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
    /** Starts checking a signed request that claims `family`; null while it runs, 'unverified' when too many run. */
    check(family: BotFamily, r: SignedRequest): SignatureOutcome | null {
      if (pending >= maxPending) return 'unverified';
      pending++;
      const now = o.directories?.now;
      void verifySignedRequest(r, resolveKey, {
        select: (member) => member !== null && byOrigin.get(member.origin) === family,
        ...(now ? { now: Math.floor(now() / 1000) } : {}),
      }).then((result) => {
        pending--;
        o.onResult(family.family, result.outcome);
      });
      return null;
    },
    /** Directory fetches started so far (tests, metrics). */
    directoryFetches: () => directories.fetches(),
  };
}
export type SignatureVerifier = ReturnType<typeof createSignatureVerifier>;
