import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../api/config.ts';
import { CANON_URL, FLOW_SITE_URL, TEST_DIST } from '../helpers/env.ts';

const UNIT = readFileSync(resolve('deploy/agent-node.service'), 'utf8');
// The unit names the checkout /opt/agent-node; the copy verified here names this checkout, so that
// systemd-analyze finds the ExecStart binary (it refuses a unit whose command does not exist).
const rendered = (unit = UNIT) => unit.replaceAll('/opt/agent-node', process.cwd());

/** `systemd-analyze verify` on a copy of the unit (or of a template, as `instance`): its exit code and everything it said. */
function verify(
  unit: string,
  options: { file?: string; instance?: string } = {},
): { status: number | null; said: string } {
  const file = options.file ?? 'agent-node.service';
  const instance = options.instance ?? file;
  const dir = mkdtempSync(join(tmpdir(), 'systemd-unit-'));
  writeFileSync(join(dir, file), unit);
  const result = spawnSync('/usr/bin/systemd-analyze', ['verify', join(dir, instance)], { encoding: 'utf8' });
  return { status: result.status, said: `${result.stdout}${result.stderr}`.trim() };
}

/** The values of a key in the [Service] section, in order. */
const values = (unit: string, key: string) =>
  [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!.trim());
/** Environment= assignments as a map. */
const environment = (unit: string) =>
  Object.fromEntries(
    values(unit, 'Environment').flatMap((line) => line.split(/\s+/).map((pair) => pair.split('=') as [string, string])),
  );

describe('deploy/agent-node.service', () => {
  it('passes systemd-analyze verify without a word', () => {
    expect(verify(rendered())).toEqual({ status: 0, said: '' });
  });

  it('made a template as docs/deploy.md says (PORT=%i), passes verify as agent-node@4322.service', () => {
    // sed without g: the first PORT=4321 of each line, and no line holds two.
    const template = rendered().replaceAll('PORT=4321', 'PORT=%i');
    expect(template).toMatch(/^Environment=PORT=%i /m);
    expect(verify(template, { file: 'agent-node@.service', instance: 'agent-node@4322.service' })).toEqual({
      status: 0,
      said: '',
    });
  });

  it('verify would catch a mistake (a misspelt key, a missing binary)', () => {
    expect(verify(rendered().replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes')).said).toMatch(
      /Unknown key 'NoNewPrivilege'/,
    );
    expect(verify(UNIT.replaceAll('/opt/agent-node', '/nonexistent/agent-node')).status).not.toBe(0);
  });

  it('runs as its own user, writes only its data folder, and stops gracefully within its timeout', () => {
    const env = environment(UNIT);
    expect(values(UNIT, 'User')).toEqual(['agent-node']);
    expect(values(UNIT, 'NoNewPrivileges')).toEqual(['yes']);
    expect(values(UNIT, 'ProtectSystem')).toEqual(['strict']);
    expect(values(UNIT, 'PrivateTmp')).toEqual(['yes']);
    expect(values(UNIT, 'ReadWritePaths')).toEqual([env.DATA_DIR]);
    expect(values(UNIT, 'StateDirectory').map((d) => `/var/lib/${d}`)).toEqual([env.DATA_DIR]);
    expect(values(UNIT, 'EnvironmentFile')).toEqual(['-/etc/agent-node/env']);
    expect(values(UNIT, 'Restart')).toEqual(['on-failure']);
    expect(values(UNIT, 'KillSignal')).toEqual(['SIGTERM']);
    // journald would otherwise drop request lines under load.
    expect(values(UNIT, 'LogRateLimitIntervalSec')).toEqual(['0']);
    // A stop waits for the requests in flight, a stalled one at most SEND_TIMEOUT_MS.
    const config = loadConfig({});
    expect(Number(values(UNIT, 'TimeoutStopSec')[0]!.replace(/s$/, ''))).toBeGreaterThan(config.SEND_TIMEOUT_MS / 1000);
    // Room for a thousand clients at their connection cap.
    expect(Number(values(UNIT, 'LimitNOFILE')[0])).toBeGreaterThanOrEqual(1000 * config.MAX_CONNECTIONS_PER_CLIENT);
  });

  it('its ExecStart, WorkingDirectory and Environment start the service from the checkout', async () => {
    const unit = rendered();
    const [command, ...args] = values(unit, 'ExecStart')[0]!.split(/\s+/);
    const data = mkdtempSync(join(tmpdir(), 'systemd-data-'));
    // As the unit would, but on a free port, a temporary data folder and the test build.
    // DNS_SERVERS: a loopback port nobody answers on; these requests start no lookup anyway.
    const env = {
      PATH: process.env.PATH,
      ...environment(unit),
      PORT: '0',
      DATA_DIR: data,
      DIST_DIR: TEST_DIST,
      SITE_URL: FLOW_SITE_URL,
      CANON_URL,
      DNS_SERVERS: '127.0.0.1:9',
    };
    const child = spawn(command!, args, {
      cwd: values(unit, 'WorkingDirectory')[0],
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const url = await new Promise<string>((done, fail) => {
        child.once('exit', (code) => fail(new Error(`exited with ${code}`)));
        createInterface({ input: child.stdout! }).on('line', (line) => {
          const match = /"msg":"listening"/.test(line) && /"url":"([^"]+)"/.exec(line);
          if (match) done(match[1]!);
        });
      });
      expect(new URL(url).hostname).toBe(environment(UNIT).HOST);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await new Promise((done) => child.once('exit', (code) => done(code)))).toBe(0);
  });
});
