import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { component, createSignature, webcrypto, type SignatureComponent } from 'http-message-sig';
import { afterEach, describe, expect, it } from 'vitest';
import { helpers, jwkToKeyID, signatureHeaders } from 'web-bot-auth';
import { signerFromJWK } from 'web-bot-auth/crypto';
import type { BotFamily } from '../../api/schemas/bot-families.ts';
import { waitFor } from '../helpers/wait.ts';
import {
  createDirectoryCache,
  NEGATIVE_TTL_MAX_MS,
  type KeyLookup,
} from '../../api/telemetry/web-bot-auth/directory-cache.ts';
import { httpDirectoryFetcher, mayConnectTo } from '../../api/telemetry/web-bot-auth/directory-fetch.ts';
import { cimdKeys, keySetOf, TEST_KEY_THUMBPRINTS } from '../../api/telemetry/web-bot-auth/key-directory.ts';
import {
  agentMember,
  parseSignatureAgent,
  type AgentMember,
} from '../../api/telemetry/web-bot-auth/signature-agent.ts';
import {
  createSignatureVerifier,
  authoritiesOf,
  CLOCK_SKEW_S,
  ledgerOutcome,
  verifySignedRequest,
  type KeyResolver,
  type SignatureVerifierOptions,
  type SignedRequest,
} from '../../api/telemetry/web-bot-auth/web-bot-auth.ts';

// The draft's appendix and cloudflare/web-bot-auth's test_data, copied with their sources noted.
/** An assistant family of our table that signs its requests from the key directory at `origin`. */
const signingFamily = (family: string, operator: string, origin: string): BotFamily => ({
  family,
  operator,
  tokens: [family],
  kind: 'ai-assistant',
  class: 'Intelligence',
  verify: 'web-bot-auth',
  weak: false,
  robots_only: false,
  signature_agents: [origin],
});

const VECTORS = JSON.parse(readFileSync(new URL('fixtures/web-bot-auth-vectors.json', import.meta.url), 'utf8')) as {
  keys: Record<string, JsonWebKey>;
  requests: {
    name: string;
    key: string;
    target_url: string;
    signature_agent?: string;
    signature_input: string;
    signature: string;
  }[];
  signature_agent_headers: {
    vectors: { name: string; header: string; entries: { label: string; uri: string; type: string }[] }[];
  };
  signature_agent_cards: { vectors: { name: string; url: string; valid: boolean; card: unknown }[] };
};
// Inside the legacy vectors' hour (created 2025-01-01T00:00:00Z).
const VECTOR_NOW = 1735689600 + 100;
// The Ed25519 test key of RFC 9421, appendix B.1.4, private half included: it signs for anyone.
const RFC9421_ED25519 = {
  kty: 'OKP',
  crv: 'Ed25519',
  d: 'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU',
  x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs',
};

const AGENT = 'https://agent.example';

interface AgentKey {
  publicJwk: JsonWebKey;
  privateJwk: JsonWebKey;
  privateKey: CryptoKey;
  keyid: string;
}

async function agentKey(privateJwk?: JsonWebKey): Promise<AgentKey> {
  let privateKey: CryptoKey;
  if (privateJwk) {
    privateKey = await crypto.subtle.importKey('jwk', privateJwk, { name: 'Ed25519' }, true, ['sign']);
  } else {
    privateKey = ((await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair)
      .privateKey;
    privateJwk = await crypto.subtle.exportKey('jwk', privateKey);
  }
  const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: privateJwk.x! };
  return {
    publicJwk,
    privateJwk,
    privateKey,
    keyid: await jwkToKeyID(publicJwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE),
  };
}

interface SignOptions {
  /** The Signature-Agent header; null sends none. */
  agent?: string | null;
  label?: string;
  components?: SignatureComponent[];
  created?: number;
  expires?: number;
  authority?: string;
  /** The scheme the client wrote (`@target-uri`, `@scheme`); https by default. */
  scheme?: string;
  target?: string;
  tag?: string | null;
  keyid?: string | null;
  nonce?: string;
  /** Another signature already on the request (multiple signatures). */
  before?: SignedRequest;
  /** More fields the signer saw (and may cover). */
  fields?: { name: string; value: string }[];
}

/** A request signed as the working-group draft says (dictionary Signature-Agent, the covered member named by key). */
async function signed(key: AgentKey, o: SignOptions = {}): Promise<SignedRequest> {
  const label = o.label ?? 'sig1';
  const authority = o.authority ?? 'node.example:4321';
  const target = o.target ?? '/api/convert';
  const agent = o.agent === undefined ? `${label}="${AGENT}"` : o.agent;
  const created = o.created ?? Math.floor(Date.now() / 1000) - 1;
  const parameters: Record<string, string | number> = { created, expires: o.expires ?? created + 300 };
  if (o.keyid !== null) parameters.keyid = o.keyid ?? key.keyid;
  if (o.tag !== null) parameters.tag = o.tag ?? 'web-bot-auth';
  if (o.nonce !== undefined) parameters.nonce = o.nonce;
  const fields = [...(agent === null ? [] : [{ name: 'signature-agent', value: agent }]), ...(o.fields ?? [])];
  const components =
    o.components ?? (agent === null ? ['@authority'] : ['@authority', component('signature-agent', { key: label })]);
  const sig = await createSignature(
    { kind: 'request', method: 'GET', targetUri: `${o.scheme ?? 'https:'}//${authority}${target}`, fields },
    { label, components, parameters, signer: webcrypto.signer(key.privateKey) },
  );
  const join = (a: string | undefined, b: string) => (a ? `${a}, ${b}` : b);
  return {
    method: 'GET',
    authority,
    target,
    signature: join(o.before?.signature, sig.signature),
    signatureInput: join(o.before?.signatureInput, sig.signatureInput),
    signatureAgent: agent ?? undefined,
  };
}

/** A request signed the earlier drafts' way, by the `web-bot-auth` package (bare-string Signature-Agent). */
async function signedLegacy(key: AgentKey, agent = `"${AGENT}"`): Promise<SignedRequest> {
  const url = 'https://node.example:4321/api/convert';
  const created = new Date(Date.now() - 1000);
  const sig = await signatureHeaders(
    { method: 'GET', url, headers: { 'signature-agent': agent } },
    await signerFromJWK(key.privateJwk),
    { created, expires: new Date(created.getTime() + 300_000) },
  );
  return {
    method: 'GET',
    authority: 'node.example:4321',
    target: '/api/convert',
    signature: sig.Signature,
    signatureInput: sig['Signature-Input'],
    signatureAgent: agent,
  };
}

/** Keys of `origin`'s directory, as a resolver: absent for any other key, unavailable for any other directory. */
async function resolverOf(
  origin: string,
  jwks: JsonWebKey[],
  o: { allowTestKeys?: boolean } = {},
): Promise<KeyResolver> {
  const set = await keySetOf({ keys: jwks }, { kidIsThumbprint: true, ...o });
  return async (member, keyid) => {
    if (member?.origin !== origin) return { status: 'unavailable' };
    const key = set.keys.get(keyid);
    return key ? { status: 'key', key } : { status: 'absent' };
  };
}

/** A key-directory server on loopback that the test owns: answers by path, counts requests. */
async function directoryServer(routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void>) {
  const hits: string[] = [];
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url!);
    requests.push(req);
    const route = routes[req.url!];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  servers.push(server);
  return { origin, hits, requests, routes, count: (path: string) => hits.filter((h) => h === path).length };
}
const servers: import('node:http').Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

const WELL_KNOWN = '/.well-known/http-message-signatures-directory';
const DIRECTORY_TYPE = 'application/http-message-signatures-directory+json';
const serveKeys =
  (keys: () => JsonWebKey[], headers: Record<string, string> = {}) =>
  (_req: IncomingMessage, res: ServerResponse) =>
    void res.writeHead(200, { 'content-type': DIRECTORY_TYPE, ...headers }).end(JSON.stringify({ keys: keys() }));
/** Waits, at most `ms`, until `done` holds (a background fetch on a loaded machine takes what it takes). */
const until = (done: () => boolean, ms = 5000) =>
  waitFor(done, { timeoutMs: ms, intervalMs: 10, what: 'a background fetch' });

describe('the draft vectors', () => {
  const request = (v: (typeof VECTORS.requests)[number]): SignedRequest => {
    const url = new URL(v.target_url);
    return {
      method: 'GET',
      authority: url.host,
      target: url.pathname,
      signature: v.signature,
      signatureInput: v.signature_input,
      signatureAgent: v.signature_agent,
    };
  };
  const vectorKeys: KeyResolver = async (_member, keyid) => {
    const set = await keySetOf({ keys: Object.values(VECTORS.keys) }, { kidIsThumbprint: true, allowTestKeys: true });
    const key = set.keys.get(keyid);
    return key ? { status: 'key', key } : { status: 'absent' };
  };

  it('the known test keys are those of RFC 9421 (thumbprints computed, not copied)', async () => {
    const thumbprints = await Promise.all(
      Object.values(VECTORS.keys).map((k) => jwkToKeyID(k, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE)),
    );
    expect(new Set(thumbprints)).toEqual(TEST_KEY_THUMBPRINTS);
  });

  it.each(VECTORS.requests.map((v) => [v.name, v] as const))(
    'verifies %s, and names the directory it covers',
    async (_name, v) => {
      const asked: (AgentMember | null)[] = [];
      const result = await verifySignedRequest(
        request(v),
        (member, keyid) => (asked.push(member), vectorKeys(member, keyid)),
        { now: VECTOR_NOW, maxWindowS: Infinity, allowTestKeys: true },
      );
      expect(result).toMatchObject({ outcome: 'verified' });
      expect(asked.map((m) => m?.identifier ?? null)).toEqual([
        v.signature_agent ? `https://signature-agent.test${WELL_KNOWN}` : null,
      ]);
    },
  );

  it.each(VECTORS.requests.map((v) => [v.name, v] as const))(
    'refuses %s as a real claim: signed by a published test key',
    async (_name, v) => {
      let asked = 0;
      const result = await verifySignedRequest(request(v), (m, k) => (asked++, vectorKeys(m, k)), {
        now: VECTOR_NOW,
        maxWindowS: Infinity,
      });
      expect(result).toMatchObject({ outcome: 'invalid', reason: 'signed with a published test key' });
      expect(asked).toBe(0);
    },
  );

  it('refuses a vector replayed to another authority, after it expires, and past the 24-hour window by default', async () => {
    const legacy = request(VECTORS.requests.find((v) => v.name.startsWith('ed25519, legacy'))!);
    const dictionary = request(VECTORS.requests.find((v) => v.name === 'ed25519, Signature-Agent dictionary')!);
    const o = { now: VECTOR_NOW, maxWindowS: Infinity, allowTestKeys: true };
    expect((await verifySignedRequest({ ...legacy, authority: 'example.org' }, vectorKeys, o)).outcome).toBe('invalid');
    expect((await verifySignedRequest(legacy, vectorKeys, { ...o, now: 1735693200 + 31 })).outcome).toBe('invalid');
    expect(await verifySignedRequest(dictionary, vectorKeys, { now: VECTOR_NOW, allowTestKeys: true })).toMatchObject({
      outcome: 'invalid',
      reason: 'valid for more than 86400 s',
    });
  });

  it.each(VECTORS.signature_agent_headers.vectors.map((v) => [v.name, v] as const))(
    'reads the Signature-Agent of %s',
    (_name, v) => {
      const parsed = parseSignatureAgent(v.header)!;
      expect(parsed.form).toBe('dictionary');
      expect(
        parsed.members.map((m) => ({
          label: m.label,
          uri: m.type === 'directory' ? m.origin : m.fetchUrl,
          type: m.type,
        })),
      ).toEqual(v.entries);
      if (v.entries[0]!.type === 'directory')
        expect(parsed.members[0]!.fetchUrl).toBe(`https://signature-agent.test${WELL_KNOWN}`);
    },
  );

  it.each(VECTORS.signature_agent_cards.vectors.map((v) => [v.name, v] as const))(
    'reads the metadata document %s',
    (_name, v) => {
      if (v.valid)
        expect(cimdKeys(v.card, v.url)).toEqual(
          'jwks_uri' in (v.card as object)
            ? { jwksUri: (v.card as { jwks_uri: string }).jwks_uri }
            : { jwks: (v.card as { jwks: unknown }).jwks },
        );
      else expect(() => cimdKeys(v.card, v.url)).toThrow();
    },
  );
});

describe('Signature-Agent', () => {
  it('reads the legacy bare string as one unlabelled directory member', () => {
    const legacy = parseSignatureAgent('"https://chatgpt.com/"')!;
    expect(legacy.form).toBe('legacy');
    expect(legacy.members).toEqual([
      {
        label: null,
        type: 'directory',
        fetchUrl: `https://chatgpt.com${WELL_KNOWN}`,
        identifier: `https://chatgpt.com${WELL_KNOWN}`,
        origin: 'https://chatgpt.com',
      },
    ]);
  });

  it('skips members it cannot use: unknown types, a directory with a path, non-URLs, non-strings, credentials', () => {
    const parsed = parseSignatureAgent(
      'a="https://x.example";type=other, b="https://x.example/some/path", c="not a url", d=42, e="ftp://x.example", f="https://u:p@x.example", g="https://ok.example/keys.json?v=2#k";type=jwks_uri',
    )!;
    expect(parsed.members).toEqual([
      {
        label: 'g',
        type: 'jwks_uri',
        fetchUrl: 'https://ok.example/keys.json?v=2',
        identifier: 'https://ok.example/keys.json',
        origin: 'https://ok.example',
      },
    ]);
    expect(parseSignatureAgent('"not a url"')).toBeNull();
    expect(parseSignatureAgent('garbage(((')).toBeNull();
  });
});

describe('checking a signed request', () => {
  it('verifies the draft form, the legacy form and a @target-uri signature made by a key of the directory', async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    expect(await verifySignedRequest(await signed(key), keys)).toMatchObject({ outcome: 'verified', label: 'sig1' });
    expect(await verifySignedRequest(await signedLegacy(key), keys)).toMatchObject({
      outcome: 'verified',
      member: { label: null },
    });
    expect(
      (
        await verifySignedRequest(
          await signed(key, { components: ['@target-uri', component('signature-agent', { key: 'sig1' })] }),
          keys,
        )
      ).outcome,
    ).toBe('verified');
  });

  it("rebuilds @target-uri and @scheme with our own URL's scheme: a site on plain http verifies what its clients signed", async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    const authorities = authoritiesOf(['http://plain.example:8080', 'https://node.example']);
    const components = ['@target-uri', '@scheme', component('signature-agent', { key: 'sig1' })];
    const outcome = async (scheme: string, authority: string) =>
      (await verifySignedRequest(await signed(key, { components, scheme, authority }), keys, { authorities })).outcome;
    expect(await outcome('http:', 'plain.example:8080')).toBe('verified');
    expect(await outcome('https:', 'node.example')).toBe('verified');
    // Signed for the other scheme than the site's: another URL.
    expect(await outcome('https:', 'plain.example:8080')).toBe('invalid');
    expect(await outcome('http:', 'node.example')).toBe('invalid');
  });

  it('holds a signature to what it covers: the path and query, the authority, the agent', async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    const r = await signed(key, {
      target: '/api/citizens?limit=5',
      components: ['@authority', '@path', '@query', component('signature-agent', { key: 'sig1' })],
    });
    expect((await verifySignedRequest(r, keys)).outcome).toBe('verified');
    expect((await verifySignedRequest({ ...r, target: '/api/citizens?limit=6' }, keys)).outcome).toBe('invalid');
    expect((await verifySignedRequest({ ...(await signed(key)), authority: 'elsewhere.example' }, keys)).outcome).toBe(
      'invalid',
    );
    // The same member label, another URL: the signed member value no longer matches.
    const swapped = { ...(await signed(key)), signatureAgent: 'sig1="https://evil.example"' };
    expect(
      (await verifySignedRequest(swapped, await resolverOf('https://evil.example', [key.publicJwk]))).outcome,
    ).toBe('invalid');
  });

  it('refuses what the profile forbids: no target component, no tag, no keyid, expired, from the future, a window over 24 h', async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    const now = Math.floor(Date.now() / 1000);
    const cases: [SignOptions, string][] = [
      [{ components: [component('signature-agent', { key: 'sig1' })] }, 'covers neither @authority nor @target-uri'],
      [{ tag: null }, 'no web-bot-auth signature covers the agent'],
      [{ tag: 'other-tag' }, 'no web-bot-auth signature covers the agent'],
      [{ keyid: null }, 'Required parameter keyid is absent'],
      [{ created: now - 600, expires: now - 60 }, 'Signature has expired'],
      [{ created: now + 120, expires: now + 400 }, 'Signature was created in the future'],
      [{ created: now - 10, expires: now + 2 * 86400 }, 'valid for more than 86400 s'],
      // Expiring before (or when) it was made: no lifetime at all.
      [{ created: now - 10, expires: now - 20 }, 'expires is not after created'],
      [{ created: now - 10, expires: now - 10 }, 'expires is not after created'],
    ];
    for (const [o, reason] of cases)
      expect(await verifySignedRequest(await signed(key, o), keys)).toMatchObject({ outcome: 'invalid', reason });
    // Within the 30 s allowed for clocks.
    expect((await verifySignedRequest(await signed(key, { created: now + 10 }), keys)).outcome).toBe('verified');
  });

  it('attributes a signature only to the member it covers', async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    // The header names the agent, but the signature covers another member.
    const r = await signed(key, { agent: `sig1="https://other.example", agent="${AGENT}"` });
    const select = (m: AgentMember | null) => m?.origin === AGENT;
    expect(await verifySignedRequest(r, keys, { select })).toMatchObject({
      outcome: 'invalid',
      reason: 'no web-bot-auth signature covers the agent',
    });
    // Signature-Agent sent but covered by no signature at all.
    const uncovered = { ...(await signed(key, { agent: null })), signatureAgent: `sig1="${AGENT}"` };
    expect((await verifySignedRequest(uncovered, keys, { select })).outcome).toBe('invalid');
    // Covering both members, it is checked as the registered one's.
    const both = await signed(key, {
      agent: `sig1="https://other.example", agent="${AGENT}"`,
      components: [
        '@authority',
        component('signature-agent', { key: 'sig1' }),
        component('signature-agent', { key: 'agent' }),
      ],
    });
    expect(await verifySignedRequest(both, keys, { select })).toMatchObject({
      outcome: 'verified',
      member: { label: 'agent' },
    });
  });

  it('checks the one signature of several that covers the registered agent, each on its own', async () => {
    const browser = await agentKey();
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    const first = await signed(browser, { label: 'browser', agent: null, components: ['@authority'] });
    const both = await signed(key, { label: 'agent', agent: `agent="${AGENT}"`, before: first });
    expect(await verifySignedRequest(both, keys, { select: (m) => m?.origin === AGENT })).toMatchObject({
      outcome: 'verified',
      label: 'agent',
    });
  });

  it('says invalid for a key the directory does not list, unverified when no directory can be had', async () => {
    const key = await agentKey();
    const stranger = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    expect(await verifySignedRequest(await signed(stranger), keys)).toMatchObject({
      outcome: 'invalid',
      reason: 'the directory does not list this key',
    });
    expect(await verifySignedRequest(await signed(key), async () => ({ status: 'unavailable' }))).toMatchObject({
      outcome: 'unverified',
    });
  });

  it('says unverified for a signature over a header the gateway does not keep, invalid for an unreadable Signature-Input', async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [key.publicJwk]);
    const r = await signed(key, {
      components: ['@authority', component('signature-agent', { key: 'sig1' }), 'content-type'],
      fields: [{ name: 'content-type', value: 'text/plain' }],
    });
    expect(await verifySignedRequest(r, keys)).toMatchObject({
      outcome: 'unverified',
      reason: 'covers a header the gateway does not keep',
    });
    expect((await verifySignedRequest({ ...(await signed(key)), signatureInput: 'garbage(((' }, keys)).outcome).toBe(
      'invalid',
    );
  });

  it('never lets a published test key verify, even when a directory lists it', async () => {
    const testKey = await agentKey(RFC9421_ED25519);
    const set = await keySetOf({ keys: [testKey.publicJwk] }, { kidIsThumbprint: true });
    expect(set.keys.size).toBe(0);
    expect(set.refused.testKeys).toBe(1);
    const listsIt: KeyResolver = async () => ({
      status: 'key',
      key: (await keySetOf({ keys: [testKey.publicJwk] }, { kidIsThumbprint: true, allowTestKeys: true })).keys.get(
        testKey.keyid,
      )!,
    });
    expect(await verifySignedRequest(await signed(testKey), listsIt)).toMatchObject({
      outcome: 'invalid',
      reason: 'signed with a published test key',
    });
  });

  it('maps the three outcomes onto the ledger', () => {
    expect(['verified', 'invalid', 'unverified'].map((o) => ledgerOutcome(o as 'verified'))).toEqual([
      'verified',
      'failed',
      'unverifiable',
    ]);
  });
});

describe('a key directory document', () => {
  it('keeps usable keys by thumbprint and counts what it leaves out', async () => {
    const key = await agentKey();
    const other = await agentKey();
    const rsa = VECTORS.keys['rfc9421-rsa-pss']!;
    const { alg: _alg, ...rsaWithoutAlg } = rsa;
    const set = await keySetOf(
      {
        keys: [
          { ...key.publicJwk, kid: key.keyid, use: 'sig', nbf: 1, exp: 4_000_000_000 },
          { ...other.publicJwk, kid: 'a label' },
          other.privateJwk,
          { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' },
          { kty: 'RSA', n: rsa.n, e: rsa.e, alg: 'RS256' },
          'nonsense',
        ],
      },
      { kidIsThumbprint: true },
    );
    expect([...set.keys.keys()]).toEqual([key.keyid]);
    expect(set.keys.get(key.keyid)).toMatchObject({ notBefore: 1, notAfter: 4_000_000_000 });
    expect(set.refused).toEqual({ testKeys: 0, unusable: 5 });
    // At a JWK Set URL, kid is the operator's label; an RSA-PSS key without alg is read as PS512.
    expect(
      (await keySetOf({ keys: [{ ...other.publicJwk, kid: 'a label' }] }, { kidIsThumbprint: false })).keys.has(
        other.keyid,
      ),
    ).toBe(true);
    expect((await keySetOf({ keys: [rsaWithoutAlg] }, { kidIsThumbprint: true, allowTestKeys: true })).keys.size).toBe(
      1,
    );
  });

  it('refuses a document that is not a JWK Set or lists too many keys', async () => {
    await expect(keySetOf({ nokeys: [] }, { kidIsThumbprint: true })).rejects.toThrow('not a JWK Set');
    await expect(keySetOf({ keys: Array.from({ length: 33 }, () => ({})) }, { kidIsThumbprint: true })).rejects.toThrow(
      'more than 32 keys',
    );
  });

  it('refuses a key outside its own nbf/exp', async () => {
    const key = await agentKey();
    const keys = await resolverOf(AGENT, [{ ...key.publicJwk, exp: Math.floor(Date.now() / 1000) - 10 } as JsonWebKey]);
    expect(await verifySignedRequest(await signed(key), keys)).toMatchObject({
      outcome: 'invalid',
      reason: 'the key is outside its nbf/exp',
    });
  });
});

describe('fetching a directory (loopback server, guarded fetcher)', () => {
  const fetcher = httpDirectoryFetcher({ allowLoopback: true, timeoutMs: 400, maxBytes: 1024 });

  it('refuses private, loopback, link-local and reserved destinations; loopback only when allowed', () => {
    for (const a of [
      '10.1.2.3',
      '192.168.0.1',
      '172.16.5.5',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '127.0.0.1',
      '::1',
      'fe80::1',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '224.0.0.1',
      'not-an-address',
    ]) {
      expect(mayConnectTo(a), a).toBe(false);
    }
    for (const a of ['93.184.215.14', '2606:4700:4700::1111']) expect(mayConnectTo(a), a).toBe(true);
    expect(mayConnectTo('127.0.0.1', true)).toBe(true);
    expect(mayConnectTo('::1', true)).toBe(true);
    expect(mayConnectTo('10.1.2.3', true)).toBe(false);
  });

  it('never connects to loopback unless configured for tests, nor over http, nor to a name that resolves inward', async () => {
    const server = await directoryServer({ [WELL_KNOWN]: serveKeys(() => []) });
    const port = new URL(server.origin).port;
    const production = httpDirectoryFetcher({
      resolve: async (host) =>
        host === 'inward.example' ? ['127.0.0.1'] : host === 'mixed.example' ? ['93.184.215.14', '10.0.0.1'] : [],
    });
    await expect(production(server.origin + WELL_KNOWN, {})).rejects.toThrow('http: is not https');
    await expect(production(`https://127.0.0.1:${port}${WELL_KNOWN}`, {})).rejects.toThrow(
      'not an address a directory may be fetched from',
    );
    await expect(production(`https://inward.example:${port}${WELL_KNOWN}`, {})).rejects.toThrow(
      'resolves to no address',
    );
    await expect(production(`https://mixed.example:${port}${WELL_KNOWN}`, {})).rejects.toThrow(
      'resolves to no address',
    );
    await expect(fetcher(`http://inward.example:${port}${WELL_KNOWN}`, {})).rejects.toThrow('http: is not https');
    expect(server.hits).toEqual([]);
    expect((await fetcher(server.origin + WELL_KNOWN, {})).status).toBe(200);
  });

  it('reads within its size and time, follows no redirect and takes no content coding', async () => {
    const server = await directoryServer({
      '/big': (_req, res) => void res.writeHead(200).end('x'.repeat(2000)),
      '/big-chunked': (_req, res) => {
        res.writeHead(200);
        for (let i = 0; i < 20; i++) res.write('x'.repeat(100));
        res.end();
      },
      '/slow': (_req, res) => void setTimeout(() => res.writeHead(200).end('{}'), 2000),
      '/moved': (_req, res) => void res.writeHead(302, { location: '/target' }).end(),
      '/gzip': (_req, res) => void res.writeHead(200, { 'content-encoding': 'gzip' }).end('x'),
    });
    await expect(fetcher(server.origin + '/big', {})).rejects.toThrow('larger than 1024 bytes');
    await expect(fetcher(server.origin + '/big-chunked', {})).rejects.toThrow('larger than 1024 bytes');
    const started = Date.now();
    await expect(fetcher(server.origin + '/slow', {})).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1500);
    expect((await fetcher(server.origin + '/moved', {})).status).toBe(302);
    await expect(fetcher(server.origin + '/gzip', {})).rejects.toThrow('content coding gzip');
    expect(server.count('/target')).toBe(0);
  });
});

describe('the directory cache', () => {
  const fetch = httpDirectoryFetcher({ allowLoopback: true, timeoutMs: 1000 });
  const directoryOf = (origin: string) => agentMember('sig1', origin, 'directory')!;
  function cache(o: { maxInFlight?: number } = {}) {
    let clock = Date.now();
    const c = createDirectoryCache({ fetch, now: () => clock, random: () => 0, ...o });
    return { c, at: (seconds: number) => (clock += seconds * 1000) };
  }
  const status = (l: KeyLookup) => l.status;

  it('keeps a directory as long as its Cache-Control says (60 s to 24 h), refreshes it ahead of time with its validators', async () => {
    const key = await agentKey();
    const server = await directoryServer({
      [WELL_KNOWN]: (req, res) => {
        if (req.headers['if-none-match'] === '"v1"')
          return void res.writeHead(304, { etag: '"v1"', 'cache-control': 'max-age=600' }).end();
        serveKeys(() => [key.publicJwk], { etag: '"v1"', 'cache-control': 'max-age=600' })(req, res);
      },
    });
    const { c, at } = cache();
    const member = directoryOf(server.origin);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    expect(server.requests[0]!.headers.accept).toBe(DIRECTORY_TYPE);
    at(300);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    expect(server.hits.length).toBe(1);
    // Past three quarters of its life: answered from the cache at once, refreshed in the background.
    at(160);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    await until(() => server.hits.length >= 2);
    expect(server.hits.length).toBe(2);
    expect(server.requests[1]!.headers['if-none-match']).toBe('"v1"');
    at(400);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    expect(server.hits.length).toBe(2);
  });

  it('holds a short max-age for a minute, and a directory that says nothing for an hour', async () => {
    const key = await agentKey();
    const server = await directoryServer({
      [WELL_KNOWN]: serveKeys(() => [key.publicJwk], { 'cache-control': 'max-age=5' }),
      '/plain.json': (_req, res) =>
        void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.publicJwk] })),
    });
    const { c, at } = cache();
    const short = directoryOf(server.origin);
    const plain = agentMember('sig1', server.origin + '/plain.json', 'jwks_uri')!;
    await c.lookup(short, key.keyid);
    await c.lookup(plain, key.keyid);
    at(30);
    await c.lookup(short, key.keyid);
    expect(server.count(WELL_KNOWN)).toBe(1);
    at(31);
    await c.lookup(short, key.keyid);
    expect(server.count(WELL_KNOWN)).toBe(2);
    at(60 * 40);
    await c.lookup(plain, key.keyid);
    expect(server.count('/plain.json')).toBe(1);
  });

  it('merges concurrent lookups into one fetch', async () => {
    const key = await agentKey();
    const server = await directoryServer({
      [WELL_KNOWN]: (req, res) => void setTimeout(() => serveKeys(() => [key.publicJwk])(req, res), 100),
    });
    const { c } = cache();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => c.lookup(directoryOf(server.origin), key.keyid)),
    );
    expect(answers.map(status)).toEqual(Array(20).fill('key'));
    expect(server.hits.length).toBe(1);
  });

  it('fetches no more than its bound at once: past it a lookup answers unverified without fetching', async () => {
    const key = await agentKey();
    const slow = await directoryServer({
      [WELL_KNOWN]: (req, res) => void setTimeout(() => serveKeys(() => [key.publicJwk])(req, res), 100),
    });
    const other = await directoryServer({ [WELL_KNOWN]: serveKeys(() => [key.publicJwk]) });
    const { c } = cache({ maxInFlight: 1 });
    const first = c.lookup(directoryOf(slow.origin), key.keyid);
    expect(status(await c.lookup(directoryOf(other.origin), key.keyid))).toBe('unavailable');
    expect(status(await first)).toBe('key');
    expect(other.hits.length).toBe(0);
    expect(status(await c.lookup(directoryOf(other.origin), key.keyid))).toBe('key');
  });

  it("gives each directory its own fetch budget: fetches of other directories never spend the genuine one's", async () => {
    const key = await agentKey();
    const server = await directoryServer({ [WELL_KNOWN]: serveKeys(() => [key.publicJwk]) });
    const { c } = cache();
    // (The verifier asks the cache only for registered directories; here the cache is asked for any.)
    const paths = Array.from({ length: 40 }, (_, i) => agentMember('sig1', `${server.origin}/k${i}.json`, 'jwks_uri')!);
    for (const m of paths) expect(status(await c.lookup(m, key.keyid))).toBe('unavailable');
    expect(server.hits.length).toBe(40);
    // Within the same minute, the registered directory is fetched at once.
    expect(status(await c.lookup(directoryOf(server.origin), key.keyid))).toBe('key');
    expect(server.count(WELL_KNOWN)).toBe(1);
  });

  it('takes 200 only, in the directory media type: anything else fails and is remembered at most five minutes', async () => {
    const key = await agentKey();
    let answer = (_req: IncomingMessage, res: ServerResponse) =>
      void res.writeHead(503, { 'retry-after': '3600' }).end();
    const server = await directoryServer({ [WELL_KNOWN]: (req, res) => answer(req, res) });
    const { c, at } = cache();
    const member = directoryOf(server.origin);
    expect(status(await c.lookup(member, key.keyid))).toBe('unavailable');
    at(60);
    expect(status(await c.lookup(member, key.keyid))).toBe('unavailable');
    expect(server.hits.length).toBe(1);
    // Retry-After asks for an hour; negative caching never lasts past five minutes.
    at(NEGATIVE_TTL_MAX_MS / 1000 - 60 + 1);
    answer = (_req, res) =>
      void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.publicJwk] }));
    expect(status(await c.lookup(member, key.keyid))).toBe('unavailable');
    expect(server.hits.length).toBe(2);
    for (const wrong of [
      (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(302, { location: '/elsewhere' }).end(),
      (_req: IncomingMessage, res: ServerResponse) =>
        void res.writeHead(200, { 'content-type': DIRECTORY_TYPE }).end('not json'),
    ]) {
      answer = wrong;
      at(NEGATIVE_TTL_MAX_MS / 1000 + 1);
      expect(status(await c.lookup(member, key.keyid))).toBe('unavailable');
    }
    answer = serveKeys(() => [key.publicJwk]);
    at(NEGATIVE_TTL_MAX_MS / 1000 + 1);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    expect(server.count('/elsewhere')).toBe(0);
  });

  it('backs off after failures in a row, never past five minutes', async () => {
    const key = await agentKey();
    const server = await directoryServer({ [WELL_KNOWN]: (_req, res) => void res.writeHead(500).end() });
    const { c, at } = cache();
    const member = directoryOf(server.origin);
    // random() = 0: 24 s, 48 s, 96 s, 192 s, then 240 s (each 0.8 of 30 s doubling, at most 5 min).
    for (const wait of [0, 24, 48, 96, 192, 240, 240]) {
      at(wait - 1);
      await c.lookup(member, key.keyid);
      at(1);
      await c.lookup(member, key.keyid);
    }
    expect(server.hits.length).toBe(7);
  });

  it('keeps the keys it holds when a refresh fails, and lets a directory that answers drop a key', async () => {
    const key = await agentKey();
    const rotated = await agentKey();
    let keys = [key.publicJwk];
    let up = true;
    const server = await directoryServer({
      [WELL_KNOWN]: (req, res) =>
        up ? serveKeys(() => keys, { 'cache-control': 'max-age=60' })(req, res) : void res.writeHead(503).end(),
    });
    const { c, at } = cache();
    const member = directoryOf(server.origin);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    up = false;
    at(61);
    expect(status(await c.lookup(member, key.keyid))).toBe('key');
    expect(server.hits.length).toBe(2);
    // A stale copy is no evidence that a key it lacks is not the agent's.
    expect(status(await c.lookup(member, rotated.keyid))).toBe('unavailable');
    up = true;
    keys = [rotated.publicJwk];
    at(NEGATIVE_TTL_MAX_MS / 1000);
    expect(status(await c.lookup(member, key.keyid))).toBe('absent');
    expect(status(await c.lookup(member, rotated.keyid))).toBe('key');
  });

  it('looks again for a keyid it does not know, at most once a minute', async () => {
    const key = await agentKey();
    const added = await agentKey();
    let keys = [key.publicJwk];
    const server = await directoryServer({ [WELL_KNOWN]: serveKeys(() => keys, { 'cache-control': 'max-age=3600' }) });
    const { c, at } = cache();
    const member = directoryOf(server.origin);
    expect(status(await c.lookup(member, added.keyid))).toBe('absent');
    at(30);
    expect(status(await c.lookup(member, added.keyid))).toBe('absent');
    expect(server.hits.length).toBe(1);
    keys = [key.publicJwk, added.publicJwk];
    at(31);
    expect(status(await c.lookup(member, added.keyid))).toBe('key');
    expect(server.hits.length).toBe(2);
  });

  it('keys are looked up by (directory, keyid): a key one directory lists is absent from another', async () => {
    const key = await agentKey();
    const a = await directoryServer({ [WELL_KNOWN]: serveKeys(() => [key.publicJwk]) });
    const b = await directoryServer({ [WELL_KNOWN]: serveKeys(() => []) });
    const { c } = cache();
    expect(status(await c.lookup(directoryOf(a.origin), key.keyid))).toBe('key');
    expect(status(await c.lookup(directoryOf(b.origin), key.keyid))).toBe('absent');
  });

  it('reads a JWK Set at its URL and a metadata document, inline or pointing to a JWK Set', async () => {
    const key = await agentKey();
    const json = (body: unknown) => (_req: IncomingMessage, res: ServerResponse) =>
      void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const server = await directoryServer({});
    Object.assign(server.routes, {
      '/jwks.json?v=1': json({ keys: [{ ...key.publicJwk, kid: 'label' }] }),
      '/inline': json({ client_id: `${server.origin}/inline`, jwks: { keys: [key.publicJwk] } }),
      '/card': json({ client_id: `${server.origin}/card`, jwks_uri: `${server.origin}/jwks.json?v=1` }),
      '/wrong-id': json({ client_id: 'https://elsewhere.example/card', jwks: { keys: [key.publicJwk] } }),
      [WELL_KNOWN]: json({ keys: [key.publicJwk] }),
    });
    const { c } = cache();
    const lookup = (path: string, type: 'jwks_uri' | 'cimd' | 'directory') =>
      c.lookup(agentMember('sig1', server.origin + path, type)!, key.keyid).then(status);
    expect(await lookup('/jwks.json?v=1', 'jwks_uri')).toBe('key');
    expect(await lookup('/inline', 'cimd')).toBe('key');
    expect(await lookup('/card', 'cimd')).toBe('key');
    expect(await lookup('/wrong-id', 'cimd')).toBe('unavailable');
    // The well-known directory must carry its own media type.
    expect(await lookup('/', 'directory')).toBe('unavailable');
    expect(server.hits).toEqual(['/jwks.json?v=1', '/inline', '/card', '/jwks.json?v=1', '/wrong-id', WELL_KNOWN]);
  });
});

describe('the signature verifier', () => {
  async function setUp(
    answer?: (req: IncomingMessage, res: ServerResponse) => void,
    // Room for every check a test starts at once: past it a check is counted at once and never
    // reported, and a test waiting for its report would wait for ever on a slow machine.
    maxPending = 10,
    more: Pick<SignatureVerifierOptions, 'claimNonce' | 'onClaimFailure' | 'nonceMemorySince'> = {},
  ) {
    const key = await agentKey();
    const server = await directoryServer({ [WELL_KNOWN]: answer ?? serveKeys(() => [key.publicJwk]) });
    const family = signingFamily('ChatGPT-User', 'OpenAI', server.origin);
    const results: string[] = [];
    const fetches: string[] = [];
    let done: () => void = () => {};
    const v = createSignatureVerifier({
      families: [family],
      fetchDirectory: httpDirectoryFetcher({ allowLoopback: true, timeoutMs: 1000 }),
      authorities: authoritiesOf(['https://node.example:4321', 'https://www.node.example']),
      onFetch: (f) => fetches.push(`${f.url} ${f.status}`),
      onResult: (f, outcome) => {
        results.push(`${f}:${outcome}`);
        done();
      },
      maxPending,
      ...more,
    });
    const settled = (n: number) => new Promise<void>((resolve) => (done = () => results.length >= n && resolve()));
    const agent = `sig1="${server.origin}"`;
    return { v, key, family, server, results, settled, agent, fetches };
  }

  it('names the family of a member on a registered origin only, whatever its type', async () => {
    const { v, family, server } = await setUp();
    expect(v.familyOf(`sig1="${server.origin}"`)).toBe(family);
    expect(v.familyOf(`a="https://evil.example", b="${server.origin}/keys.json";type=jwks_uri`)).toBe(family);
    expect(v.familyOf(`"${server.origin}"`)).toBe(family);
    expect(v.familyOf('sig1="https://evil.example"')).toBeNull();
    expect(v.familyOf(undefined)).toBeNull();
  });

  it('checks in the background, fetches the directory once, and reports each outcome', async () => {
    const { v, key, family, server, results, settled, agent } = await setUp();
    const wait = settled(2);
    expect(v.check(family, await signed(key, { agent }))).toBeNull();
    expect(v.check(family, await signed(await agentKey(), { agent }))).toBeNull();
    await wait;
    expect(results.sort()).toEqual(['ChatGPT-User:invalid', 'ChatGPT-User:verified']);
    expect(server.hits).toEqual([WELL_KNOWN]);
  });

  it('reports unverified when the directory cannot be had, and does not fetch it again at once', async () => {
    const { v, key, family, server, results, settled, agent } = await setUp(
      (_req, res) => void res.writeHead(500).end(),
    );
    let wait = settled(1);
    v.check(family, await signed(key, { agent }));
    await wait;
    wait = settled(2);
    v.check(family, await signed(key, { agent }));
    await wait;
    expect(results).toEqual(['ChatGPT-User:unverified', 'ChatGPT-User:unverified']);
    expect(server.hits.length).toBe(1);
  });

  it('counts a claim unverified at once when too many checks run', async () => {
    const { v, key, family, agent } = await setUp(() => {}, 2);
    expect(v.check(family, await signed(key, { agent }))).toBeNull();
    expect(v.check(family, await signed(key, { agent }))).toBeNull();
    expect(v.check(family, await signed(key, { agent }))).toBe('unverified');
  });

  it('verifies a signature only for our own authorities: one made for another host, sent with that Host, is invalid', async () => {
    const { v, key, family, results, settled, agent } = await setUp();
    const wait = settled(3);
    v.check(family, await signed(key, { agent, authority: 'shop.example' }));
    v.check(family, await signed(key, { agent, authority: 'www.node.example', nonce: 'a' }));
    v.check(family, await signed(key, { agent, authority: 'www.node.example:443', nonce: 'b' }));
    await wait;
    expect(results.sort()).toEqual(['ChatGPT-User:invalid', 'ChatGPT-User:verified', 'ChatGPT-User:verified']);
  });

  it('counts a replayed nonce as replayed, not verified; a signature without one is not tracked', async () => {
    const { v, key, family, results, settled, agent } = await setUp();
    const once = await signed(key, { agent, nonce: 'n-1' });
    let wait = settled(1);
    v.check(family, once);
    await wait;
    wait = settled(4);
    v.check(family, once);
    v.check(family, await signed(key, { agent, nonce: 'n-1', target: '/other' }));
    v.check(family, await signed(key, { agent, nonce: 'n-2' }));
    await wait;
    const bare = await signed(key, { agent });
    wait = settled(6);
    v.check(family, bare);
    v.check(family, bare);
    await wait;
    expect(results.slice(0, 1)).toEqual(['ChatGPT-User:verified']);
    expect(results.slice(1, 4).sort()).toEqual([
      'ChatGPT-User:replayed',
      'ChatGPT-User:replayed',
      'ChatGPT-User:verified',
    ]);
    // Two requests of one second may carry the same nonce-less signature: only a nonce tells a replay.
    expect(results.slice(4)).toEqual(['ChatGPT-User:verified', 'ChatGPT-User:verified']);
    expect(v.stats().replays).toBe(2);
    expect(ledgerOutcome('replayed')).toBe('failed');
  });

  it('counts a nonce signed before its memory began unverified, never verified: it may be a replay across a restart', async () => {
    const since = Math.floor(Date.now() / 1000);
    const { v, key, family, results, settled, agent } = await setUp(undefined, 10, { nonceMemorySince: since });
    const wait = settled(2);
    v.check(family, await signed(key, { agent, nonce: 'before', created: since - 5 }));
    v.check(family, await signed(key, { agent, nonce: 'after', created: since }));
    await wait;
    expect(results.sort()).toEqual(['ChatGPT-User:unverified', 'ChatGPT-User:verified']);
    // With a memory every process shares (PostgreSQL's), which outlives a restart, its claim decides.
    const shared = await setUp(undefined, 10, { nonceMemorySince: since, claimNonce: async () => true });
    const claimed = shared.settled(1);
    shared.v.check(
      shared.family,
      await signed(shared.key, { agent: shared.agent, nonce: 'before', created: since - 5 }),
    );
    await claimed;
    expect(shared.results).toEqual(['ChatGPT-User:verified']);
  });

  it('claims on the shared memory only a nonce this process has not seen: one another process claimed is replayed here', async () => {
    // The memory every process shares, as the PostgreSQL store keeps it: one claim per (signer, nonce).
    const shared = new Map<string, number>([['ChatGPT-User\nclaimed-elsewhere', Number.MAX_SAFE_INTEGER]]);
    const asked: string[] = [];
    const claimNonce = async (signer: string, nonce: string, expiresAt: number) => {
      asked.push(nonce);
      if (shared.has(`${signer}\n${nonce}`)) return false;
      shared.set(`${signer}\n${nonce}`, expiresAt);
      return true;
    };
    const { v, key, family, results, settled, agent } = await setUp(undefined, 10, { claimNonce });
    const created = Math.floor(Date.now() / 1000) - 1;
    let wait = settled(2);
    v.check(family, await signed(key, { agent, nonce: 'claimed-elsewhere' }));
    v.check(family, await signed(key, { agent, nonce: 'fresh', created, expires: created + 60 }));
    await wait;
    expect(results.sort()).toEqual(['ChatGPT-User:replayed', 'ChatGPT-User:verified']);
    // Kept until the signature expires, with the clock skew a later use may still claim.
    expect(shared.get('ChatGPT-User\nfresh')).toBe(created + 60 + CLOCK_SKEW_S);
    // A replay this process saw is answered here, with no round trip; a signature without a nonce claims nothing.
    wait = settled(4);
    v.check(family, await signed(key, { agent, nonce: 'fresh', target: '/other' }));
    v.check(family, await signed(key, { agent }));
    await wait;
    expect(results.slice(2).sort()).toEqual(['ChatGPT-User:replayed', 'ChatGPT-User:verified']);
    expect(asked.sort()).toEqual(['claimed-elsewhere', 'fresh']);
    expect(v.stats()).toMatchObject({ replays: 2, nonceClaimFailures: 0 });
  });

  it('counts a signature whose nonce the shared memory could not claim as unverified, never verified, and tells of it', async () => {
    const failures: unknown[] = [];
    const outage = new Error('PostgreSQL did not answer the last call');
    const { v, key, family, results, settled, agent } = await setUp(undefined, 10, {
      claimNonce: () => Promise.reject(outage),
      onClaimFailure: (error) => failures.push(error),
    });
    const wait = settled(2);
    v.check(family, await signed(key, { agent, nonce: 'during-the-outage' }));
    v.check(family, await signed(key, { agent }));
    await wait;
    expect(results.sort()).toEqual(['ChatGPT-User:unverified', 'ChatGPT-User:verified']);
    expect(failures).toEqual([outage]);
    expect(v.stats()).toMatchObject({ replays: 0, nonceClaimFailures: 1 });
  });

  it('holds a check while its claim waits for the shared memory: claims in flight are bounded with the checks', async () => {
    let claims = 0;
    const { v, key, family, agent } = await setUp(undefined, 1, {
      claimNonce: () => (claims++, new Promise<boolean>(() => {})),
    });
    expect(v.check(family, await signed(key, { agent, nonce: 'held' }))).toBeNull();
    await until(() => claims === 1);
    expect(v.check(family, await signed(key, { agent, nonce: 'next' }))).toBe('unverified');
  });

  it("forgets a signer's nonces when they expire, and never takes a replay as verified when its memory is full", async () => {
    const key = await agentKey();
    const server = await directoryServer({ [WELL_KNOWN]: serveKeys(() => [key.publicJwk]) });
    let clock = Date.now();
    const results: string[] = [];
    const v = createSignatureVerifier({
      families: [signingFamily('A', 'A', server.origin)],
      fetchDirectory: httpDirectoryFetcher({ allowLoopback: true, timeoutMs: 1000 }),
      onResult: (_f, outcome) => results.push(outcome),
      maxNonces: 2,
      directories: { now: () => clock },
    });
    const family = v.familyOf(`sig1="${server.origin}"`)!;
    const agent = `sig1="${server.origin}"`;
    const created = Math.floor(clock / 1000) - 1;
    for (const nonce of ['a', 'b', 'c']) {
      v.check(family, await signed(key, { agent, nonce, created, expires: created + 60 }));
      await until(() => results.length === ['a', 'b', 'c'].indexOf(nonce) + 1);
    }
    expect(results).toEqual(['verified', 'verified', 'unverified']);
    // Past their expiry (and the clock skew) the two are forgotten: room again.
    clock += 120_000;
    const later = Math.floor(clock / 1000) - 1;
    v.check(family, await signed(key, { agent, nonce: 'a', created: later, expires: later + 60 }));
    await until(() => results.length === 4);
    expect(results[3]).toBe('verified');
  });

  it('fetches only the registered directory: a flood of other URLs and keyids neither fetches nor starves the genuine signer', async () => {
    const { v, key, family, server, results, settled, agent, fetches } = await setUp(undefined, 1000);
    let wait = settled(60);
    for (let i = 0; i < 60; i++)
      v.check(family, await signed(key, { agent: `sig1="${server.origin}/k${i}.json";type=jwks_uri` }));
    await wait;
    expect(results.every((r) => r === 'ChatGPT-User:unverified')).toBe(true);
    expect(server.hits).toEqual([]);
    expect(v.stats().unregistered).toBe(60);
    // The registered origin's own root is its well-known directory, not a JWK Set or a metadata document.
    wait = settled(62);
    v.check(family, await signed(key, { agent: `sig1="${server.origin}/";type=jwks_uri` }));
    v.check(family, await signed(key, { agent: `sig1="${server.origin}/";type=cimd` }));
    await wait;
    expect(results.slice(60)).toEqual(['ChatGPT-User:unverified', 'ChatGPT-User:unverified']);
    expect(server.hits).toEqual([]);
    results.splice(60, 2);
    wait = settled(60 + 300);
    for (let i = 0; i < 300; i++) v.check(family, await signed(key, { agent, keyid: `unknown-${i}` }));
    await wait;
    expect(results.slice(60).every((r) => r === 'ChatGPT-User:invalid')).toBe(true);
    wait = settled(60 + 300 + 5);
    for (let i = 0; i < 5; i++) v.check(family, await signed(key, { agent, nonce: `genuine-${i}` }));
    await wait;
    expect(results.slice(-5)).toEqual(Array(5).fill('ChatGPT-User:verified'));
    // One fetch of the registered directory, logged with its answer.
    expect(server.hits).toEqual([WELL_KNOWN]);
    expect(fetches).toEqual([`${server.origin}${WELL_KNOWN} 200`]);
    expect(v.stats().directoryFetches).toBe(1);
  });
});
