import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalJson } from './canonical.ts';

/** A signed tree head of the receipt log. */
export interface TreeHead {
  tree_size: number;
  /** Hex SHA-256 root (RFC 9162 MTH). */
  root_hash: string;
  timestamp: string;
  /** Base64 Ed25519 signature over the RFC 8785 form of {tree_size, root_hash, timestamp}. */
  signature: string;
}

export interface LogSigner {
  /** SPKI public key, PEM. */
  publicKeyPem: string;
  signHead(head: Omit<TreeHead, 'signature'>): TreeHead;
}

const KEY_FILE = 'omip-log-ed25519.pem';

function signerOf(privateKey: KeyObject): LogSigner {
  return {
    publicKeyPem: createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString(),
    signHead: (head) => ({
      ...head,
      signature: sign(null, Buffer.from(canonicalJson(head)), privateKey).toString('base64'),
    }),
  };
}

/** Reads an Ed25519 private key from a PEM file; anything else is a configuration error. */
async function readKeyFile(path: string): Promise<KeyObject> {
  const key = createPrivateKey(await readFile(path, 'utf8'));
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`${path} holds a ${key.asymmetricKeyType} key; the receipt log signs with Ed25519`);
  return key;
}

/**
 * The log's Ed25519 key: from `keyFile` when the operator gives one (the same for every process),
 * else made at first start in the data folder (mode 0600) and read after.
 */
export async function openLogSigner(dataDir: string | null, keyFile?: string): Promise<LogSigner> {
  if (keyFile !== undefined) return signerOf(await readKeyFile(keyFile));
  if (dataDir === null) return signerOf(generateKeyPairSync('ed25519').privateKey);
  const path = join(dataDir, KEY_FILE);
  try {
    return signerOf(await readKeyFile(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  // A folder that refuses the key (read-only) still gets a working log, signed by a key for this run.
  await writeFile(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' }).catch(
    () => undefined,
  );
  return signerOf(privateKey);
}

/** Checks a tree head's signature against a published public key. */
export function verifyTreeHead(head: TreeHead, publicKeyPem: string): boolean {
  const { signature, ...signed } = head;
  return verify(
    null,
    Buffer.from(canonicalJson(signed)),
    createPublicKey(publicKeyPem),
    Buffer.from(signature, 'base64'),
  );
}
