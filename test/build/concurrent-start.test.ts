import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServerProcess } from '../helpers/server.ts';

describe('the build is a deploy step', () => {
  it('two processes started at once without a build: one builds, both serve, nothing half-built is left', async () => {
    // Inside the project, as ./dist is: the build's server imports the project's node_modules.
    mkdirSync('test-results', { recursive: true });
    const parent = mkdtempSync(join('test-results', 'fresh-checkout-'));
    const dist = join(parent, 'dist');
    // Vitest's own variables would put Astro's Vite into test mode.
    const env = Object.fromEntries(
      Object.entries(process.env)
        .filter(([k]) => k.startsWith('VITEST') || k === 'NODE_ENV' || k === 'TEST')
        .map(([k]) => [k, '']),
    );
    const [a, b] = await Promise.all([
      startServerProcess({ ...env, DIST_DIR: dist, DATABASE_URL: '', DATA_DIR: ':memory:' }),
      startServerProcess({ ...env, DIST_DIR: dist, DATA_DIR: ':memory:' }),
    ]);
    try {
      const builds = [a, b].filter((s) => s.logs.some((l) => l.includes('no build found: running astro build')));
      expect(builds).toHaveLength(1);
      for (const server of [a, b]) {
        const convert = await fetch(`${server.url}/api/convert`);
        expect(convert.status).toBe(200);
      }
      expect(readdirSync(parent)).toEqual(['dist']);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      rmSync(parent, { recursive: true, force: true });
    }
  }, 180_000);
});
