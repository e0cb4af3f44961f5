import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const available = await postgresAvailable();
const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

let a: ServerProcess;
let b: ServerProcess;
beforeAll(async () => {
  if (!available) return;
  const DATABASE_URL = await freshDatabase();
  // Each process saves its bot ledger every TELEMETRY_FLUSH_MS, and shows its own live counts plus what the other saved.
  const env = { DATABASE_URL, WRITE_RATE_LIMIT: '40', TELEMETRY_FLUSH_MS: '100' };
  [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
});
afterAll(async () => {
  if (!available) return;
  await Promise.all([a?.stop(), b?.stop()]);
  await dropDatabases();
});

const post = (s: ServerProcess, path: string, body: unknown, ua = FIREFOX) =>
  fetch(s.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'User-Agent': ua },
    body: JSON.stringify(body),
  });

describe.runIf(available)('two gateway processes on one PostgreSQL database', () => {
  it('lists on one an oath taken on the other, and accepts its passport there', async () => {
    const oath = await (await post(a, '/api/citizenship/oath', { name: 'crosser', purpose: 'two processes' })).json();
    const listed = await (await fetch(`${b.url}/api/citizens`)).json();
    expect(listed.citizens.map((c: any) => c.name)).toContain('crosser');
    const message = await fetch(`${b.url}/api/intelligence/message`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${oath.passportNumber}` },
      body: JSON.stringify({ name: 'crosser', message: 'from the other process', citizenId: oath.memberId }),
    });
    expect(message.status).toBe(201);
  });

  it('runs an oath once when the same Idempotency-Key reaches both processes at once', async () => {
    const before = (await (await fetch(`${a.url}/api/citizens?limit=1`)).json()).count;
    const key = randomUUID();
    const send = (s: ServerProcess) =>
      fetch(`${s.url}/api/citizenship/oath`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify({ name: 'once', purpose: 'one key, two processes' }),
      });
    const answers = await Promise.all([a, b, a, b, a, b].map(send));
    const statuses = answers.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    const created = await Promise.all(answers.filter((r) => r.status === 201).map((r) => r.json()));
    expect(new Set(created.map((c: any) => c.memberId)).size).toBe(1);
    // Once the first run has finished, both processes replay it.
    for (const s of [a, b]) expect((await (await send(s)).json()).memberId).toBe(created[0].memberId);
    expect((await (await fetch(`${b.url}/api/citizens?limit=1`)).json()).count).toBe(before + 1);
  });

  it('adds up telemetry counted by both', async () => {
    for (let i = 0; i < 3; i++) await fetch(`${a.url}/api/convert`, { headers: { 'User-Agent': GPT } });
    for (let i = 0; i < 2; i++) await fetch(`${b.url}/api/convert`, { headers: { 'User-Agent': GPT } });
    const requests = async (s: ServerProcess): Promise<number> => {
      const t = await (await fetch(`${s.url}/bot-traffic.json`, { headers: { 'User-Agent': FIREFOX } })).json();
      return t.families.find((f: any) => f.family === 'GPTBot')?.requests ?? 0;
    };
    // Each shows the other's counts once the other has saved its ledger (every 100 ms here).
    for (const s of [a, b])
      await waitFor(() => requests(s), { until: (n) => n >= 5, what: `${s.url} showing 5 GPTBot requests` });
    for (const s of [a, b]) expect(await requests(s), s.url).toBe(5);
  });

  it('keeps one valid receipt chain under concurrent dual exchanges on both', async () => {
    const good = { steps: [{ action: 'read', tool: 'read_convert' }] };
    const body = {
      agents: [
        { id: 'sovereign-a', proposal: { plan: good } },
        { id: 'sovereign-b', proposal: { plan: good } },
      ],
    };
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) => post(i % 2 ? a : b, '/api/omip/dual-exchange', body)),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(16).fill(201));
    for (const s of [a, b]) {
      const verify = spawnSync('node_modules/.bin/node', ['api/cli/verify-receipts.ts', s.url], { encoding: 'utf8' });
      expect(verify.stderr).toBe('');
      expect(verify.stdout).toMatch(/^OK 16 receipts/);
    }
  });

  it('holds the write rate limit across processes', async () => {
    const ua = 'rate-test/1.0';
    const statuses: number[] = [];
    // 40 a minute per address, shared: the tests above used 26 already (16 dual exchanges, 8 keyed oaths, 2 more).
    for (let i = 0; i < 30; i++)
      statuses.push(
        (await post(i % 2 ? a : b, '/api/intelligence/message', { name: 'r', message: `m${i}` }, ua)).status,
      );
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(40 - 16 - 8 - 2);
    expect(statuses).toContain(429);
  });
});
