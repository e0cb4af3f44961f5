import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib.ts';
import { loadConfig } from '../../api/config.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// Building the image takes minutes (deploy/build-image.sh, run by hand: docs/deploy.md); these
// check what the file promises, and run its health check against a real server.

/** The Containerfile's instructions, continuation lines joined, comments dropped, by stage. */
function stages(text: string): { from: string; instructions: { op: string; args: string }[] }[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const result: { from: string; instructions: { op: string; args: string }[] }[] = [];
  for (const line of lines) {
    const [, op, args] = /^(\S+)\s+(.*)$/.exec(line)!;
    if (op!.toUpperCase() === 'FROM') result.push({ from: args!, instructions: [] });
    else result.at(-1)?.instructions.push({ op: op!.toUpperCase(), args: args!.replace(/\s+/g, ' ') });
  }
  return result;
}

const TEXT = readFileSync(resolve('deploy/Containerfile'), 'utf8');
const [build, runtime] = stages(TEXT);
const all = (op: string) => runtime!.instructions.filter((i) => i.op === op).map((i) => i.args);
const pkg = JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const lock = JSON.parse(readFileSync(resolve('package-lock.json'), 'utf8')) as {
  packages: Record<string, { version: string }>;
};

describe('deploy/Containerfile', () => {
  it('has two stages on one Debian bookworm base: a build and a runtime', () => {
    expect(stages(TEXT)).toHaveLength(2);
    expect(TEXT).toMatch(/^ARG BASE=docker\.io\/library\/debian:bookworm-slim$/m);
    expect(build!.from).toBe('${BASE} AS build');
    expect(runtime!.from).toBe('${BASE}');
  });

  it('builds from the lockfile and runs the pinned Node, the version package.json names', () => {
    const runs = build!.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => r.includes('npm ci'))).toBe(true);
    expect(runs.some((r) => r.includes('npm run build'))).toBe(true);
    expect(runs.some((r) => r.includes('npm prune --omit=dev'))).toBe(true);
    // The Node that runs npm and the build is package.json's `node`; the runtime's is the binary
    // `npm ci` installed from the lockfile, which pins that same version.
    expect(TEXT).toContain(`require("./package.json").devDependencies.node`);
    expect(runs.some((r) => r.startsWith('cp node_modules/node/bin/node /usr/local/bin/node'))).toBe(true);
    expect(all('COPY')).toContain('--from=build /usr/local/bin/node /usr/local/bin/node');
    expect(lock.packages['node_modules/node']!.version).toBe(pkg.devDependencies.node);
    expect(pkg.devDependencies.node).toMatch(/^22\.\d+\.\d+$/);
    // No other Node: no node image, no version written in the file.
    expect(TEXT).not.toMatch(/FROM\s+\S*node:|node@\d|node-v?\d\d/);
  });

  it('runs the service as a non-root user, with its data on a volume', () => {
    const users = all('USER');
    expect(users).toHaveLength(1);
    expect(users[0]).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(all('VOLUME')).toEqual(['/data']);
    expect(all('ENV').join(' ')).toMatch(/\bDATA_DIR=\/data\b/);
    expect(all('RUN').join(' ')).toMatch(/chown 10001:10001 \/data/);
    expect(all('EXPOSE')).toEqual([String(loadConfig({}).PORT)]);
    expect(all('STOPSIGNAL')).toEqual(['SIGTERM']);
    expect(all('CMD')).toEqual(['["node", "api/main.ts"]']);
    // What the runtime reads: the build, the engine, the content, the production modules.
    const copied = all('COPY').map((c) => c.split(' ').at(-2));
    for (const path of ['package.json', 'node_modules', 'api', 'content', 'dist'])
      expect(copied).toContain(`/app/${path}`);
  });

  describe('its HEALTHCHECK', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer();
    });
    afterAll(() => server?.stop());

    /** The health check's command, run as the image would run it (PORT from the environment). */
    const check = (port: string): Promise<number | null> => {
      const json = /HEALTHCHECK .* CMD (\[.*\])$/.exec(all('HEALTHCHECK').map((h) => `HEALTHCHECK ${h}`)[0]!)![1]!;
      const [command, ...args] = JSON.parse(json) as string[];
      expect(command).toBe('node');
      return new Promise((done) =>
        spawn('node_modules/.bin/node', args, { env: { PORT: port }, stdio: 'ignore' }).once('exit', done),
      );
    };

    it('asks /livez and passes while the server answers', async () => {
      expect(all('HEALTHCHECK')[0]).toMatch(/\/livez/);
      expect(await check(new URL(server.url).port)).toBe(0);
    });

    it('fails when nothing answers', async () => {
      expect(await check(String(await freePort()))).toBe(1);
    });
  });
});
