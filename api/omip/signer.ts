import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { StartupError } from '../startup-error.ts';
import { syncDir } from '../store/embedded/durable-file.ts';
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
  /** Hex SHA-256 of the public key's SPKI DER form: how the log names a key. */
  keyId: string;
  signHead(head: Omit<TreeHead, 'signature'>): TreeHead;
  /** Set when this start made a new key where signed receipts already existed (LOG_SIGNING_KEY_ROTATE=1). */
  rotation?: KeyRotation;
}

/** A new key made in place of a missing one, to be recorded in the log. */
export interface KeyRotation {
  /** The missing key's id, when its public key was kept beside it; null when nothing names it. */
  old_key_id: string | null;
  new_key_id: string;
}

export const KEY_FILE = 'omip-log-ed25519.pem';
// The first line of a key this service writes names the key's id, so a damaged key (a flipped byte
// may still parse, as another key) is found: the key read must have the id written beside it.
const ID_LINE = 'Receipt log signing key, Ed25519; key id (SHA-256 of its public key): ';
const ID_PATTERN = /^Receipt log signing key, Ed25519; key id \(SHA-256 of its public key\): ([0-9a-f]*)$/m;

export const keyIdOf = (key: KeyObject): string =>
  createHash('sha256')
    .update((key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' }))
    .digest('hex');

function signerOf(privateKey: KeyObject): LogSigner {
  return {
    publicKeyPem: createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString(),
    keyId: keyIdOf(privateKey),
    signHead: (head) => ({
      ...head,
      signature: sign(null, Buffer.from(canonicalJson(head)), privateKey).toString('base64'),
    }),
  };
}

const HOW_TO_RECOVER =
  'restore it from a backup; or, to sign from now on with a new key (tree heads signed before will not verify under it), move it away and start once with LOG_SIGNING_KEY_ROTATE=1';

/** Reads an Ed25519 private key from a PEM file; null when there is no file; anything else refuses the start, naming the file. */
async function readKeyFile(path: string): Promise<KeyObject | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new StartupError(
      `the receipt log's signing key ${path} cannot be read (${code ?? (error as Error).message}): ${HOW_TO_RECOVER}`,
    );
  }
  if (text.trim() === '')
    throw new StartupError(
      `the receipt log's signing key ${path} is empty (a write that did not finish, as on a full disk, leaves such a file): ${HOW_TO_RECOVER}`,
    );
  let key: KeyObject;
  try {
    key = createPrivateKey(text);
  } catch (error) {
    throw new StartupError(
      `the receipt log's signing key ${path} is not a readable PEM private key (${(error as Error).message}): ${HOW_TO_RECOVER}`,
    );
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new StartupError(`${path} holds a ${key.asymmetricKeyType} key; the receipt log signs with Ed25519`);
  const written = ID_PATTERN.exec(text)?.[1];
  if (written !== undefined && written !== keyIdOf(key))
    throw new StartupError(
      `the receipt log's signing key ${path} is damaged: the key it holds is not the key ${written.slice(0, 16)}... its first line names: ${HOW_TO_RECOVER}`,
    );
  return key;
}

/**
 * Writes a key so that no crash or full disk leaves a partial one under its name: a temporary file
 * written and fsynced, renamed over, and the folder fsynced. `write` is the step that fills the
 * temporary file (a test makes it fail midway, as a full disk would).
 */
export async function writeKeyDurably(
  path: string,
  key: KeyObject,
  write: (handle: import('node:fs/promises').FileHandle, text: string) => Promise<void> = (handle, text) =>
    handle.writeFile(text),
): Promise<void> {
  const temporary = `${path}.tmp`;
  const text = `${ID_LINE}${keyIdOf(key)}\n${key.export({ type: 'pkcs8', format: 'pem' }).toString()}`;
  try {
    const handle = await open(temporary, 'w', 0o600);
    try {
      await write(handle, text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new StartupError(
      `the receipt log's signing key cannot be written to ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); nothing was left under that name`,
    );
  }
  await syncDir(dirname(path));
}

/** Where the public key of the folder's key is kept, so a rotation can name the key it replaces. */
const publicKeyFile = (path: string) => `${path.replace(/\.pem$/, '')}.pub.pem`;

async function keptKeyId(path: string): Promise<string | null> {
  try {
    return keyIdOf(createPublicKey(await readFile(publicKeyFile(path), 'utf8')));
  } catch {
    return null;
  }
}

async function keepPublicKey(path: string, key: KeyObject): Promise<void> {
  const pem = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();
  const existing = await readFile(publicKeyFile(path), 'utf8').catch(() => null);
  if (existing === pem) return;
  const temporary = `${publicKeyFile(path)}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(pem);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, publicKeyFile(path));
  await syncDir(dirname(path));
}

export interface KeyOptions {
  /** Whether the log already holds receipts (their heads were signed by the key that is missing). */
  hasReceipts?: () => Promise<boolean>;
  /** LOG_SIGNING_KEY_ROTATE: a missing key beside receipts is replaced instead of refusing the start. */
  rotate?: boolean;
}

/**
 * The log's Ed25519 key: from `keyFile` when the operator gives one (the same for every process),
 * else made at first start in the data folder (mode 0600, written durably) and read after. A key
 * that is empty, unreadable or damaged refuses the start; so does a missing one while the log holds
 * receipts, unless `rotate` says to make a new one (the signer then carries the rotation to record).
 */
export async function openLogSigner(
  dataDir: string | null,
  keyFile?: string,
  options: KeyOptions = {},
): Promise<LogSigner> {
  if (keyFile !== undefined) {
    const key = await readKeyFile(keyFile);
    if (key === null) throw new StartupError(`LOG_SIGNING_KEY_FILE ${keyFile} does not exist`);
    return signerOf(key);
  }
  if (dataDir === null) return signerOf(generateKeyPairSync('ed25519').privateKey);
  const path = join(dataDir, KEY_FILE);
  const existing = await readKeyFile(path);
  if (existing !== null) {
    await keepPublicKey(path, existing).catch(() => undefined);
    return signerOf(existing);
  }
  const signed = (await options.hasReceipts?.()) ?? false;
  if (signed && !options.rotate)
    throw new StartupError(
      `the receipt log's signing key ${path} is missing while the log holds signed receipts (a new key would leave every earlier signed head unverifiable): restore it from a backup, or start once with LOG_SIGNING_KEY_ROTATE=1 to sign with a new key from now on (the rotation is recorded in the log)`,
    );
  const { privateKey } = generateKeyPairSync('ed25519');
  const old = signed ? await keptKeyId(path) : null;
  await writeKeyDurably(path, privateKey);
  await keepPublicKey(path, privateKey);
  const signer = signerOf(privateKey);
  return signed ? { ...signer, rotation: { old_key_id: old, new_key_id: signer.keyId } } : signer;
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
