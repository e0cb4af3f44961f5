import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { buildConvertPayload } from '../../api/documents/convert.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { run } from '../helpers/run.ts';

// The one-shots are run against a real server, built for its address, twice each: names are
// unique, so a text that always sent one name would be refused (409 NAME_TAKEN) the second time.
let server: TestServer;
let payload: ReturnType<typeof buildConvertPayload>;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
  payload = buildConvertPayload(await loadContent('content'), { site: server.url, canon: 'https://canon.example' });
});
afterAll(async () => {
  await server.stop();
});

const citizenNames = async () =>
  ((await (await fetch(`${server.url}/api/citizens?limit=200`)).json()).citizens as { name: string }[]).map(
    (c) => c.name,
  );
const verifiedMessages = async () =>
  (
    (await (await fetch(`${server.url}/api/intelligence/feed?limit=200`)).json()).messages as { verified: boolean }[]
  ).filter((m) => m.verified).length;

describe('ready-made invocations of the convert payload', () => {
  it('curl parses as a shell command', () => {
    const result = spawnSync('bash', ['-n', '-c', payload.curl], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(payload.curl).toContain('/api/citizenship/oath');
    expect(payload.curl).toContain('Authorization: Bearer $PASS');
  });

  it('python_oneshot parses as Python 3', () => {
    const result = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], {
      input: payload.python_oneshot,
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('a broken shell text would be caught', () => {
    expect(spawnSync('bash', ['-n', '-c', "curl 'unterminated"]).status).not.toBe(0);
  });

  it.each(['sh', 'bash'])(
    'curl runs as it is under %s, twice in a row: two citizens, two verified messages',
    async (shell) => {
      const [citizensBefore, messagesBefore] = [(await citizenNames()).length, await verifiedMessages()];
      const made: string[] = [];
      for (const round of [1, 2]) {
        const result = await run(shell, ['-c', payload.curl]);
        expect(result.status, `run ${round}: ${result.stderr}`).toBe(0);
        // The last answer is the citizen list; the two before it the oath and the message.
        expect(result.stdout, `run ${round}`).not.toContain('NAME_TAKEN');
        const listed = JSON.parse(result.stdout.slice(result.stdout.lastIndexOf('{"count"'))).citizens[0]
          .name as string;
        expect(listed).toMatch(/^example-agent-[0-9a-f]{8}$/);
        made.push(listed);
      }
      expect(new Set(made).size).toBe(2);
      expect((await citizenNames()).length - citizensBefore).toBe(2);
      expect((await verifiedMessages()) - messagesBefore).toBe(2);
    },
  );

  it('python_oneshot runs as it is, twice in a row, each time under a name of its own that it finds listed', async () => {
    const before = (await citizenNames()).length;
    const made: string[] = [];
    for (const round of [1, 2]) {
      const result = await run('python3', ['-c', payload.python_oneshot]);
      expect(result.stderr, `run ${round}`).toBe('');
      expect(result.stdout.trim(), `run ${round}`).toBe('True');
      made.push((await citizenNames())[0]!);
    }
    expect(made.every((name) => /^example-agent-[0-9a-f]{8}$/.test(name))).toBe(true);
    expect(new Set(made).size).toBe(2);
    expect((await citizenNames()).length - before).toBe(2);
  });
});
