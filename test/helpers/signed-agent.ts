import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { component, createSignature, webcrypto } from 'http-message-sig';
import { helpers, jwkToKeyID } from 'web-bot-auth';

// A signing agent as the HTTP tests play it: its keys, its key directory on loopback, the shipped
// content naming that directory for ChatGPT-User, and requests signed as the working-group draft says.

export const WELL_KNOWN = '/.well-known/http-message-signatures-directory';
// Signed agents often send a browser's User-Agent: the signature says who they are.
export const CHROME =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';

export interface AgentKey {
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
  keyid: string;
}

/** An Ed25519 key (a new one unless `privateJwk` is given) and its RFC 7638 thumbprint. */
export async function agentKey(privateJwk?: JsonWebKey): Promise<AgentKey> {
  privateJwk ??= await crypto.subtle.exportKey(
    'jwk',
    ((await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair).privateKey,
  );
  const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: privateJwk.x! };
  return {
    privateJwk,
    publicJwk,
    keyid: await jwkToKeyID(publicJwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE),
  };
}

/** A key directory on loopback answering with `handler`; its origin is the agent's. */
export async function directoryServer(handler: RequestListener): Promise<{ server: Server; agent: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, agent: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A well-known directory's answer listing `keys`, fresh for an hour. */
export const directoryAnswer = (keys: (JsonWebKey & { kid?: string })[]) => ({
  headers: {
    'Content-Type': 'application/http-message-signatures-directory+json',
    'Cache-Control': 'max-age=3600',
  },
  body: JSON.stringify({ keys }),
});

/**
 * A copy of the shipped content whose ChatGPT-User signs from `agents` (an origin is its well-known
 * directory): the only URLs the server fetches for it. Its folder, for CONTENT_DIR.
 */
export function contentSignedFrom(agents: string[]): string {
  const content = mkdtempSync(join(tmpdir(), 'agentnode-content-'));
  cpSync('content', content, { recursive: true });
  const families = join(content, 'bot-families.yaml');
  const shipped = "signature_agents: ['https://chatgpt.com']";
  const text = readFileSync(families, 'utf8');
  // Left in place, the server would look for chatgpt.com's directory: a test sends nothing off this machine.
  if (!text.includes(shipped)) throw new Error(`content/bot-families.yaml no longer holds ${shipped}`);
  writeFileSync(families, text.replace(shipped, `signature_agents: [${agents.map((a) => `'${a}'`).join(', ')}]`));
  return content;
}

/**
 * The headers of a GET of `url` signed as the working-group draft says: Signature-Agent a
 * dictionary, its member covered by key, valid for a minute, with `nonce` when given.
 */
export async function signedHeaders(
  url: string,
  signer: AgentKey,
  o: { signatureAgent: string; nonce?: string | undefined },
): Promise<Record<string, string>> {
  const created = Math.floor(Date.now() / 1000);
  const privateKey = await crypto.subtle.importKey('jwk', signer.privateJwk, { name: 'Ed25519' }, false, ['sign']);
  const parameters: Record<string, string | number> = {
    created,
    expires: created + 60,
    keyid: signer.keyid,
    tag: 'web-bot-auth',
  };
  if (o.nonce) parameters.nonce = o.nonce;
  const sig = await createSignature(
    {
      kind: 'request',
      method: 'GET',
      targetUri: url,
      fields: [{ name: 'signature-agent', value: o.signatureAgent }],
    },
    {
      label: 'sig1',
      components: ['@authority', component('signature-agent', { key: 'sig1' })],
      parameters,
      signer: webcrypto.signer(privateKey),
    },
  );
  return { 'Signature-Agent': o.signatureAgent, Signature: sig.signature, 'Signature-Input': sig.signatureInput };
}
