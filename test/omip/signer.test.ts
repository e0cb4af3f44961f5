import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLogSigner, verifyTreeHead } from '../../api/omip/signer.ts';
import { startServer } from '../helpers/server.ts';

const folder = () => mkdtempSync(join(tmpdir(), 'agentnode-key-'));
const keyFile = (type: 'ed25519' | 'rsa') => {
  const path = join(folder(), 'log.pem');
  const { privateKey } =
    type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return path;
};
const head = { tree_size: 1, root_hash: 'ab'.repeat(32), timestamp: '2026-11-21T00:00:00.000Z' };

describe('the receipt log signing key', () => {
  it('keeps the key a data folder made at first start', async () => {
    const dir = folder();
    const first = await openLogSigner(dir);
    expect((await openLogSigner(dir)).publicKeyPem).toBe(first.publicKeyPem);
  });

  it('uses the operator key file, whatever the data folder, and refuses a key that is not Ed25519', async () => {
    const path = keyFile('ed25519');
    const a = await openLogSigner(folder(), path);
    const b = await openLogSigner(null, path);
    expect(b.publicKeyPem).toBe(a.publicKeyPem);
    expect(verifyTreeHead(a.signHead(head), b.publicKeyPem)).toBe(true);
    await expect(openLogSigner(folder(), keyFile('rsa'))).rejects.toThrow(/Ed25519/);
  });

  it('publishes one public key from two servers given the same LOG_SIGNING_KEY_FILE', async () => {
    const LOG_SIGNING_KEY_FILE = keyFile('ed25519');
    const servers = await Promise.all([startServer({ LOG_SIGNING_KEY_FILE }), startServer({ LOG_SIGNING_KEY_FILE })]);
    try {
      const keys = await Promise.all(
        servers.map(
          async (s) => ((await (await fetch(`${s.url}/api/omip/log`)).json()) as { public_key: string }).public_key,
        ),
      );
      expect(keys[0]).toContain('BEGIN PUBLIC KEY');
      expect(keys[1]).toBe(keys[0]);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  });
});
