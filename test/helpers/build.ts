import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { CANON_URL, FLOW_SITE_URL, TEST_DIST } from './env.ts';

/** Builds the site once for the whole run, with URLs that point at the test servers. */
export default function setup(): void {
  rmSync(TEST_DIST, { recursive: true, force: true });
  const result = spawnSync('node_modules/.bin/astro', ['build', '--silent'], {
    env: { ...process.env, DIST_DIR: TEST_DIST, SITE_URL: FLOW_SITE_URL, CANON_URL },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`astro build failed:\n${result.stdout}\n${result.stderr}`);
}
