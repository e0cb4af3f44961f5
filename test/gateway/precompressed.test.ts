import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadStaticSite, precompressSite, PRECOMPRESSED_DIR } from '../../api/gateway/static-site.ts';
import { TEST_DIST } from '../helpers/env.ts';

const BUILT = 'http://built.example';
const document = JSON.stringify({ self: `${BUILT}/a.json`, text: 'an agent reads this '.repeat(100) });

/** A client build of one compressible document and one too small to compress, with its compressed forms. */
function site() {
  const dist = mkdtempSync(join(tmpdir(), 'precompressed-'));
  const client = join(dist, 'client');
  mkdirSync(client);
  writeFileSync(join(client, 'a.json'), document);
  writeFileSync(join(client, 'small.txt'), 'small');
  return { dist, client, pre: join(dist, PRECOMPRESSED_DIR), manifest: { siteUrl: BUILT, routes: {} } };
}

describe('compressed forms made at build time', () => {
  it('are written once per compressible file, named by the hash of its body', async () => {
    const { client, pre } = site();
    await precompressSite(client, pre);
    const names = readdirSync(pre).sort();
    expect(names).toHaveLength(2);
    expect(names.map((n) => n.split('.')[1])).toEqual(['br', 'gz']);
    const files = await loadStaticSite(client, { siteUrl: BUILT, routes: {} }, BUILT, pre);
    const a = files.get('/a.json')!;
    expect(a.etags.identity).toBe(`"${names[0]!.split('.')[0]}"`);
    expect(brotliDecompressSync(a.br!).toString()).toBe(document);
    expect(gunzipSync(a.gzip!).toString()).toBe(document);
    expect(files.get('/small.txt')!.br).toBeUndefined();
  });

  it('are read, not made again, when the body is the one they were made from', async () => {
    const { client, pre, manifest } = site();
    await precompressSite(client, pre);
    // Put a recognisable brotli body in place of the build's: the loader must serve what it finds.
    const br = readdirSync(pre).find((n) => n.endsWith('.br'))!;
    const marker = brotliCompressSync(Buffer.from('read from the build'));
    writeFileSync(join(pre, br), marker);
    const files = await loadStaticSite(client, manifest, BUILT, pre);
    expect(files.get('/a.json')!.br!.equals(marker)).toBe(true);
  });

  it('are made at load for a body rewritten for another SITE_URL, and when the build has none', async () => {
    const { client, pre, manifest } = site();
    await precompressSite(client, pre);
    const moved = await loadStaticSite(client, manifest, 'http://served.example', pre);
    const body = brotliDecompressSync(moved.get('/a.json')!.br!).toString();
    expect(body).toContain('http://served.example/a.json');
    expect(body).not.toContain(BUILT);
    const none = await loadStaticSite(client, manifest, BUILT, join(pre, 'missing'));
    expect(brotliDecompressSync(none.get('/a.json')!.br!).toString()).toBe(document);
  });

  it('come with the test build for every file the gateway compresses', async () => {
    const names = new Set(readdirSync(join(TEST_DIST, PRECOMPRESSED_DIR)));
    const manifest = { routes: {} };
    const files = await loadStaticSite(join(TEST_DIST, 'client'), manifest, undefined, join(TEST_DIST, 'missing'));
    const compressed = [...new Set(files.values())].filter((f) => f.br);
    expect(compressed.length).toBeGreaterThan(10);
    for (const f of compressed) {
      const tag = f.etags.identity.slice(1, -1);
      expect(names.has(`${tag}.br`) && names.has(`${tag}.gz`), tag).toBe(true);
    }
  });
});
