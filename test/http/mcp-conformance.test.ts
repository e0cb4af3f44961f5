import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownAddress, startServer, type TestServer } from '../helpers/server.ts';

/**
 * The official MCP conformance suite, run by its CLI against the built server on loopback, at both
 * protocol revisions /mcp serves. The scenarios are those that apply to a server with our tools (no
 * prompts, resources, sampling or elicitation of its own); the baseline names the few checks that
 * need the suite's diagnostic tools, and the CLI fails on a check outside it or on a stale entry.
 */
const SCENARIOS = {
  '2026-07-28': ['server-stateless', 'tools-list', 'caching', 'http-header-validation', 'dns-rebinding-protection'],
  '2025-11-25': ['server-initialize', 'tools-list', 'ping', 'dns-rebinding-protection'],
} as const;
const CLI = resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = resolve('test/http/mcp-conformance.expected-failures.yaml');
/** The baseline's check ids (`scenario:check`), read as the CLI reads them. */
const EXPECTED = readFileSync(BASELINE, 'utf8')
  .split('\n')
  .map((line) => /^\s*-\s*([\w-]+:[\w-]+)\s*$/.exec(line)?.[1])
  .filter((id): id is string => id !== undefined);

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
}
interface Run {
  code: number | null;
  output: string;
  checks: Check[];
}

/** One scenario at one revision: the CLI's exit code, what it printed and the checks it saved. */
function conformance(url: string, scenario: string, version: string): Promise<Run> {
  const outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  const args = [CLI, 'server', '--url', url, '--scenario', scenario, '--spec-version', version];
  args.push('--expected-failures', BASELINE, '--output-dir', outDir, '--timeout', '20000');
  // The suite needs Node 22 (fs.globSync): the project's own node binary, as the server runs on.
  const child = spawn(resolve('node_modules/.bin/node'), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((done) =>
    child.once('close', (code) => {
      const runs = readdirSync(outDir);
      const checks = runs.length === 1 ? JSON.parse(readFileSync(join(outDir, runs[0]!, 'checks.json'), 'utf8')) : [];
      rmSync(outDir, { recursive: true, force: true });
      done({ code, output, checks });
    }),
  );
}

/** Runs the suites two at a time (two cores): each takes about three seconds alone, the nine well under a minute. */
let slots = 2;
const waiting: (() => void)[] = [];
async function twoAtATime<T>(run: () => Promise<T>): Promise<T> {
  if (slots === 0) await new Promise<void>((go) => waiting.push(go));
  else slots--;
  try {
    return await run();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else slots++;
  }
}

let server: TestServer;
let mcp: string;
beforeAll(async () => {
  // Its own address: the suite sends Host and Origin of the URL it is given, which must be the site's.
  server = await startServer(await ownAddress());
  mcp = `${server.url}/mcp`;
});
afterAll(() => server.stop());

describe('the MCP conformance suite against /mcp', () => {
  for (const [version, scenarios] of Object.entries(SCENARIOS)) {
    describe.concurrent(`at ${version}`, () => {
      for (const scenario of scenarios) {
        it(`passes ${scenario}`, { timeout: 60_000 }, async () => {
          const run = await twoAtATime(() => conformance(mcp, scenario, version));
          const failed = run.checks.filter((c) => c.status === 'FAILURE').map((c) => `${scenario}:${c.id}`);
          // The scenario ran (an inapplicable one exits 0 having checked nothing) and passed something.
          expect(
            run.checks.some((c) => c.status === 'SUCCESS'),
            run.output,
          ).toBe(true);
          expect([...new Set(failed)].sort(), run.output).toEqual(
            EXPECTED.filter((id) => id.startsWith(`${scenario}:`)).sort(),
          );
          expect(run.code, run.output).toBe(0);
        });
      }
    });
  }

  it('has a baseline of checks that exist in the suite, each with its reason', () => {
    const text = readFileSync(BASELINE, 'utf8');
    expect(EXPECTED.length).toBeGreaterThan(0);
    for (const id of EXPECTED) {
      const line = text.split('\n').findIndex((l) => l.includes(id));
      expect(text.split('\n')[line - 1], `${id} has a reason above it`).toMatch(/^\s*#/);
    }
  });
});
