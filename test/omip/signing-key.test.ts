import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, truncateSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEY_FILE, openLogSigner, verifyTreeHead, writeKeyDurably } from '../../api/omip/signer.ts';
import { StartupError } from '../../api/startup-error.ts';
import { startServer, startServerProcess } from '../helpers/server.ts';

// The receipt log's signing key: written so no crash or full disk leaves a partial one, and a key
// that is empty, damaged or missing beside signed receipts refuses the start with one line naming
// the file, never a new key made silently (that orphans every earlier signed head).
const folder = () => mkdtempSync(join(tmpdir(), 'agentnode-key-'));
const head = { tree_size: 1, root_hash: 'ab'.repeat(32), timestamp: '2026-11-26T00:00:00.000Z' };
const withReceipts = { hasReceipts: async () => true };

async function refusal(start: Promise<unknown>): Promise<StartupError> {
  const error = await start.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StartupError);
  expect((error as Error).message).not.toContain('\n');
  return error as StartupError;
}

describe('the signing key in the data folder', () => {
  it('is written with its id on the first line, mode 0600, and read back the same', async () => {
    const dir = folder();
    const first = await openLogSigner(dir);
    const text = readFileSync(join(dir, KEY_FILE), 'utf8');
    expect(text).toMatch(
      new RegExp(
        `^Receipt log signing key, Ed25519; key id \\(SHA-256 of its public key\\): ${first.keyId}\\n-----BEGIN PRIVATE KEY-----`,
      ),
    );
    const again = await openLogSigner(dir, undefined, withReceipts);
    expect(again.keyId).toBe(first.keyId);
    expect(verifyTreeHead(first.signHead(head), again.publicKeyPem)).toBe(true);
    expect(again.rotation).toBeUndefined();
  });

  it('an empty key refuses the start, naming the file (not ERR_OSSL_UNSUPPORTED)', async () => {
    const dir = folder();
    writeFileSync(join(dir, KEY_FILE), '');
    const error = await refusal(openLogSigner(dir));
    expect(error.message).toContain(join(dir, KEY_FILE));
    expect(error.message).toMatch(/is empty/);
    expect(error.message).toContain('LOG_SIGNING_KEY_ROTATE=1');
  });

  it('a corrupt key refuses, and so does a key cut at any byte or with a byte flipped that still parses as another key', async () => {
    const dir = folder();
    const signer = await openLogSigner(dir);
    const path = join(dir, KEY_FILE);
    const good = readFileSync(path);
    writeFileSync(path, '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n');
    expect((await refusal(openLogSigner(dir))).message).toMatch(/is not a readable PEM private key/);
    // Cut at every offset: refused, naming the file (a cut inside the id line's newline still holds the whole key: the same key).
    for (let cut = 0; cut < good.length; cut++) {
      writeFileSync(path, good.subarray(0, cut));
      const outcome = await openLogSigner(dir).then(
        (s) => s.keyId,
        (e: unknown) => e,
      );
      if (typeof outcome === 'string') expect(outcome).toBe(signer.keyId);
      else expect((outcome as Error).message).toContain(path);
    }
    // Every byte flipped in turn: refused, or (a flip the PEM reader ignores) the very same key; never another key.
    for (let at = 0; at < good.length; at++) {
      const damaged = Buffer.from(good);
      damaged[at] = damaged[at]! ^ 0x04;
      writeFileSync(path, damaged);
      const outcome = await openLogSigner(dir).then(
        (s) => s.keyId,
        (e: unknown) => e,
      );
      if (typeof outcome === 'string') expect(outcome, `flip at ${at}`).toBe(signer.keyId);
      else expect(outcome).toBeInstanceOf(StartupError);
    }
  });

  it('an unreadable key refuses, naming the file', async () => {
    if (process.getuid?.() === 0) {
      // root reads any mode: a folder in the key's place is as unreadable.
      const dir = folder();
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(dir, KEY_FILE));
      expect((await refusal(openLogSigner(dir))).message).toMatch(/cannot be read \(EISDIR\)/);
    } else {
      const dir = folder();
      await openLogSigner(dir);
      chmodSync(join(dir, KEY_FILE), 0o000);
      expect((await refusal(openLogSigner(dir))).message).toMatch(/cannot be read \(EACCES\)/);
    }
  });

  it('a missing key beside signed receipts refuses; LOG_SIGNING_KEY_ROTATE=1 makes a new one and names the old', async () => {
    const dir = folder();
    const old = await openLogSigner(dir);
    const { rmSync } = await import('node:fs');
    rmSync(join(dir, KEY_FILE));
    const error = await refusal(openLogSigner(dir, undefined, withReceipts));
    expect(error.message).toMatch(/is missing while the log holds signed receipts/);
    expect(existsSync(join(dir, KEY_FILE))).toBe(false);
    const rotated = await openLogSigner(dir, undefined, { ...withReceipts, rotate: true });
    expect(rotated.keyId).not.toBe(old.keyId);
    expect(rotated.rotation).toEqual({ old_key_id: old.keyId, new_key_id: rotated.keyId });
    // Made once: the next start reads it, rotation or not.
    expect((await openLogSigner(dir, undefined, withReceipts)).keyId).toBe(rotated.keyId);
  });

  it('a write that fails midway (a full disk) leaves no key under its name, never an empty one; the next start writes it whole', async () => {
    const dir = folder();
    const path = join(dir, KEY_FILE);
    const { privateKey } = generateKeyPairSync('ed25519');
    const error = await refusal(
      writeKeyDurably(path, privateKey, async (handle, text) => {
        await handle.write(text.slice(0, 20));
        throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      }),
    );
    expect(error.message).toContain('ENOSPC');
    expect(readdirSync(dir)).toEqual([]);
    // A crash after the temporary file was written but before the rename leaves only the temporary file.
    writeFileSync(`${path}.tmp`, '');
    const signer = await openLogSigner(dir);
    expect(readFileSync(path, 'utf8')).toContain(signer.keyId);
    expect(existsSync(`${path}.tmp`)).toBe(false);
  });
});

describe('an operator key file (LOG_SIGNING_KEY_FILE)', () => {
  it('missing or empty: refuses, naming the file', async () => {
    const dir = folder();
    const path = join(dir, 'log.pem');
    expect((await refusal(openLogSigner(folder(), path))).message).toBe(`LOG_SIGNING_KEY_FILE ${path} does not exist`);
    writeFileSync(path, '\n');
    expect((await refusal(openLogSigner(folder(), path))).message).toContain(`${path} is empty`);
    truncateSync(path, 0);
    expect((await refusal(openLogSigner(null, path))).message).toContain(path);
  });
});

describe('the service with a damaged or missing key', () => {
  it('exits non-zero with one line naming an empty key file', async () => {
    const DATA_DIR = folder();
    writeFileSync(join(DATA_DIR, KEY_FILE), '');
    const error = await startServerProcess({ DATA_DIR }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain(
      `agent-node cannot start: the receipt log's signing key ${join(DATA_DIR, KEY_FILE)} is empty`,
    );
  });

  it('with receipts and no key, refuses; with LOG_SIGNING_KEY_ROTATE=1 starts and records the rotation in the log', async () => {
    const DATA_DIR = folder();
    const first = await startServer({ DATA_DIR, WRITE_RATE_LIMIT: '0' });
    const plan = { steps: [{ action: 'Read the constitution', tool: 'read_doctrine' }] };
    const agent = (id: string) => ({ id, proposal: { plan } });
    const exchange = await fetch(`${first.url}/api/omip/dual-exchange`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ agents: [agent('sovereign-a'), agent('sovereign-b')] }),
    });
    expect(exchange.status).toBe(201);
    const oldKey = ((await (await fetch(`${first.url}/api/omip/log`)).json()) as { public_key: string }).public_key;
    await first.stop();
    const { rmSync } = await import('node:fs');
    rmSync(join(DATA_DIR, KEY_FILE));
    await expect(startServer({ DATA_DIR })).rejects.toThrow(/is missing while the log holds signed receipts/);
    const second = await startServer({ DATA_DIR, LOG_SIGNING_KEY_ROTATE: '1' });
    try {
      const log = (await (await fetch(`${second.url}/api/omip/log`)).json()) as { public_key: string };
      expect(log.public_key).not.toBe(oldKey);
      const list = (await (await fetch(`${second.url}/api/omip/receipts`)).json()) as {
        receipts: { type: string; old_key_id?: string; new_key_id?: string; prev: string | null; id: string }[];
      };
      expect(list.receipts.map((r) => r.type).sort()).toEqual(['omip.dual-exchange', 'omip.log-key-rotation']);
      const rotation = list.receipts.find((r) => r.type === 'omip.log-key-rotation')!;
      expect(rotation.prev).toBe(list.receipts.find((r) => r.type === 'omip.dual-exchange')!.id);
      expect(rotation.old_key_id).toMatch(/^[0-9a-f]{64}$/);
      expect(rotation.new_key_id).toMatch(/^[0-9a-f]{64}$/);
      expect(rotation.new_key_id).not.toBe(rotation.old_key_id);
      expect(second.logs.some((l) => l.includes('receipt log signing key rotated'))).toBe(true);
    } finally {
      await second.stop();
    }
  });
});
