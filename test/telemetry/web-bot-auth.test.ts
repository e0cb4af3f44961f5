import { describe, expect, it } from 'vitest';
import { signatureHeaders } from 'web-bot-auth';
import { signerFromJWK } from 'web-bot-auth/crypto';
import type { BotFamily } from '../../api/schemas/bot-families.ts';
import { BotFamiliesSchema } from '../../api/schemas/bot-families.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSignatureVerifier, httpDirectoryFetcher, keyDirectory, signatureAgentOrigin, verifySignedRequest, type SignedRequest } from '../../api/telemetry/web-bot-auth.ts';

// The Ed25519 test key of RFC 9421, appendix B.1.4.
const RFC9421_KEY = { kty: 'OKP', crv: 'Ed25519', d: 'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU', x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs' };
const PUBLIC = { kty: 'OKP', crv: 'Ed25519', x: RFC9421_KEY.x };
const AGENT = 'https://agent.example';
const FAMILY: BotFamily = { family: 'ChatGPT-User', operator: 'OpenAI', tokens: ['ChatGPT-User'], kind: 'ai-assistant', class: 'Intelligence', verify: 'web-bot-auth', weak: false, robots_only: false, signature_agents: [AGENT] };

async function otherKey(): Promise<JsonWebKey> {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  return crypto.subtle.exportKey('jwk', pair.privateKey);
}

/** A request signed as a Web Bot Auth agent would sign it. */
async function signed(o: { key?: JsonWebKey; created?: Date; expires?: Date; agent?: string | null; components?: string[]; authority?: string; target?: string } = {}): Promise<SignedRequest> {
  const authority = o.authority ?? 'node.example:4321';
  const target = o.target ?? '/api/convert';
  const agent = o.agent === undefined ? `sig1="${AGENT}"` : o.agent;
  const headers: Record<string, string> = agent === null ? {} : { 'signature-agent': agent };
  const created = o.created ?? new Date(Date.now() - 1000);
  const sig = await signatureHeaders({ method: 'GET', url: `https://${authority}${target}`, headers }, await signerFromJWK(o.key ?? RFC9421_KEY), {
    created,
    expires: o.expires ?? new Date(created.getTime() + 300_000),
    ...(o.components ? { components: o.components } : {}),
  });
  return { method: 'GET', authority, target, signature: sig.Signature, signatureInput: sig['Signature-Input'], signatureAgent: agent ?? undefined };
}

describe('Signature-Agent', () => {
  it('reads the dictionary form and the earlier string form as an origin', () => {
    expect(signatureAgentOrigin('sig1="https://chatgpt.com"')).toBe('https://chatgpt.com');
    expect(signatureAgentOrigin('"https://chatgpt.com/"')).toBe('https://chatgpt.com');
    expect(signatureAgentOrigin('not a url')).toBeNull();
    expect(signatureAgentOrigin('"ftp://chatgpt.com"')).toBeNull();
  });

  it('accepts only https origins (http on loopback) as registered agents', () => {
    const parse = (agent: string) => BotFamiliesSchema.safeParse({ families: [{ ...FAMILY, signature_agents: [agent] }] }).success;
    expect(parse('https://chatgpt.com')).toBe(true);
    expect(parse('http://127.0.0.1:8080')).toBe(true);
    expect(parse('http://chatgpt.com')).toBe(false);
    expect(parse('https://chatgpt.com/some/path')).toBe(false);
  });
});

describe('Web Bot Auth verification (signed-request fixtures)', () => {
  const keys = () => keyDirectory([PUBLIC]);

  it('verifies a valid signature made by a key of the directory', async () => {
    expect(await verifySignedRequest(await signed(), await keys())).toBe('verified');
  });

  it('verifies a signature that also covers the path and query', async () => {
    const r = await signed({ target: '/api/citizens?limit=5', components: ['@authority', 'signature-agent', '@path', '@query'] });
    expect(await verifySignedRequest(r, await keys())).toBe('verified');
    expect(await verifySignedRequest({ ...r, target: '/api/citizens?limit=6' }, await keys())).toBe('unverified');
  });

  it('refuses an expired signature', async () => {
    const created = new Date(Date.now() - 600_000);
    expect(await verifySignedRequest(await signed({ created, expires: new Date(created.getTime() + 60_000) }), await keys())).toBe('unverified');
  });

  it('refuses a signature made by a key the directory does not list', async () => {
    expect(await verifySignedRequest(await signed({ key: await otherKey() }), await keys())).toBe('unverified');
  });

  it('refuses a signature replayed against another authority', async () => {
    const r = await signed();
    expect(await verifySignedRequest({ ...r, authority: 'elsewhere.example' }, await keys())).toBe('unverified');
  });

  it('refuses a Signature-Agent header the signature does not cover', async () => {
    const unsignedAgent = { ...(await signed({ agent: null })), signatureAgent: `sig1="${AGENT}"` };
    expect(await verifySignedRequest(unsignedAgent, await keys())).toBe('unverified');
  });

  it('refuses a signature that does not cover the authority', async () => {
    expect(await verifySignedRequest(await signed({ components: ['signature-agent'] }), await keys())).toBe('unverified');
  });

  it('refuses a swapped Signature-Agent and a malformed header', async () => {
    const r = await signed();
    expect(await verifySignedRequest({ ...r, signatureAgent: 'sig1="https://evil.example"' }, await keys())).toBe('unverified');
    expect(await verifySignedRequest({ ...r, signatureInput: 'garbage(((' }, await keys())).toBe('unverified');
  });
});

describe('the signature verifier', () => {
  function verifier(fetchDirectory = async () => keyDirectory([PUBLIC])) {
    const results: string[] = [];
    let fetches = 0;
    let done: () => void = () => {};
    const v = createSignatureVerifier({
      families: [FAMILY],
      fetchDirectory: async (origin) => {
        fetches++;
        expect(origin).toBe(AGENT);
        return fetchDirectory();
      },
      onResult: (family, verdict) => {
        results.push(`${family}:${verdict}`);
        done();
      },
      maxPending: 2,
    });
    const settled = (n: number) => new Promise<void>((resolve) => (done = () => results.length >= n && resolve()));
    return { v, results, settled, fetches: () => fetches };
  }

  it('names the family of a registered agent only', () => {
    const { v } = verifier();
    expect(v.familyOf(`sig1="${AGENT}"`)).toBe(FAMILY);
    expect(v.familyOf('sig1="https://evil.example"')).toBeNull();
    expect(v.familyOf(undefined)).toBeNull();
  });

  it('checks in the background, fetches a directory once, and reports each answer', async () => {
    const { v, results, settled, fetches } = verifier();
    const wait = settled(2);
    expect(v.check(FAMILY, await signed())).toBeNull();
    expect(v.check(FAMILY, await signed({ key: await otherKey() }))).toBeNull();
    await wait;
    expect(results.sort()).toEqual(['ChatGPT-User:unverified', 'ChatGPT-User:verified']);
    expect(fetches()).toBe(1);
  });

  it('counts a claim unverified at once when too many checks run, or the agent is not the family', async () => {
    const { v } = verifier(() => new Promise(() => {}));
    expect(v.check(FAMILY, await signed())).toBeNull();
    expect(v.check(FAMILY, await signed())).toBeNull();
    expect(v.check(FAMILY, await signed())).toBe('unverified');
    expect(v.check(FAMILY, await signed({ agent: 'sig1="https://evil.example"' }))).toBe('unverified');
  });

  it('treats an agent whose directory cannot be fetched as unverified, and does not refetch at once', async () => {
    const { v, results, settled, fetches } = verifier(() => Promise.reject(new Error('unreachable')));
    let wait = settled(1);
    expect(v.check(FAMILY, await signed())).toBeNull();
    await wait;
    wait = settled(2);
    expect(v.check(FAMILY, await signed())).toBeNull();
    await wait;
    expect(results).toEqual(['ChatGPT-User:unverified', 'ChatGPT-User:unverified']);
    expect(fetches()).toBe(1);
  });
});

describe('the key directory over HTTP', () => {
  it('reads the keys by thumbprint, and refuses an error, a redirect and an oversized directory', async () => {
    const answers: Record<string, (res: import('node:http').ServerResponse) => void> = {
      good: (res) => res.end(JSON.stringify({ keys: [PUBLIC, { kty: 'nonsense' }] })),
      missing: (res) => res.writeHead(404).end(),
      moved: (res) => res.writeHead(302, { Location: 'https://elsewhere.example/' }).end(),
      huge: (res) => res.end(JSON.stringify({ keys: [PUBLIC], padding: 'x'.repeat(100_000) })),
    };
    let mode = 'good';
    const server = createServer((req, res) => (req.url === '/.well-known/http-message-signatures-directory' ? answers[mode]!(res) : res.writeHead(404).end()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const fetchDirectory = httpDirectoryFetcher(1000, 64 * 1024);
      const keys = await fetchDirectory(origin);
      expect([...keys.values()]).toEqual([PUBLIC]);
      expect(await verifySignedRequest(await signed(), keys)).toBe('verified');
      for (mode of ['missing', 'moved', 'huge']) await expect(fetchDirectory(origin)).rejects.toThrow();
    } finally {
      server.close();
    }
  });
});
