import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
// Imported, not read from disk at a path: the build bundles this module elsewhere.
import pkg from '../package.json' with { type: 'json' };

/** The commit this process runs: BUILD_COMMIT when the deploy says it (a container has no .git), else git's, else "unknown". */
function commitOf(): string {
  const said = process.env.BUILD_COMMIT;
  if (said && /^[0-9a-f]{7,40}$/i.test(said)) return said.toLowerCase();
  try {
    const here = fileURLToPath(new URL('.', import.meta.url));
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: here, stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

/** Which release this is (package.json's semantic version), of which commit, on which Node: /readyz, /metrics' build_info and every log line say it. */
export const BUILD = {
  version: pkg.version,
  commit: commitOf(),
  node: process.versions.node,
} as const;

/** When this process started (uptime). */
export const STARTED_AT = Date.now();
