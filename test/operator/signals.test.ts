import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterAvailable, startCluster, type PgCluster } from '../helpers/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// What an on-call engineer reads during a PostgreSQL outage: one error line when it goes, one info
// line when it is back, 503 request lines at warn, and /metrics that tell a 503 from a 500.
const available = clusterAvailable();
const TOKEN = 'signals-metrics-token-0123456789abcdef';

type Line = Record<string, unknown>;
const parsed = (lines: string[]): Line[] =>
  lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as Line];
    } catch {
      return [];
    }
  });

describe.runIf(available)('signals an on-call engineer can page on', () => {
  let cluster: PgCluster;
  let server: ServerProcess;

  beforeAll(async () => {
    cluster = await startCluster();
    const url = await cluster.createDatabase('agentnode_signals');
    server = await startServerProcess({ DATABASE_URL: url, METRICS_TOKEN: TOKEN, WRITE_RATE_LIMIT: '1000000' });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await cluster?.stop();
  });

  const oath = (headers: Record<string, string> = {}) =>
    fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ name: `signal-${randomUUID()}`, purpose: 'Be counted.' }),
      signal: AbortSignal.timeout(15_000),
    });
  const metrics = async () =>
    (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
  const sample = (text: string, name: string) => {
    const m = new RegExp(`^${name.replace(/[{}"=,]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };

  it('keeps an X-Request-Id it is sent when plain and bounded, makes one otherwise, echoes it, and logs it on the request line', async () => {
    const kept = await fetch(`${server.url}/livez`, { headers: { 'X-Request-Id': 'edge-7f3a:42' } });
    expect(kept.headers.get('x-request-id')).toBe('edge-7f3a:42');
    for (const bad of ['has space', 'x'.repeat(129), 'quote"d']) {
      const made = await fetch(`${server.url}/livez`, { headers: { 'X-Request-Id': bad } });
      expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const none = await fetch(`${server.url}/livez`);
    const id = none.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    for (const want of ['edge-7f3a:42', id]) {
      const line = JSON.parse(await server.waitForLog((l) => l.includes(`"requestId":"${want}"`))) as Line;
      expect(line).toMatchObject({ msg: 'request', path: '/livez', status: 200, pid: server.child.pid });
      expect(line.host).toEqual(expect.any(String));
      expect(line.version).toMatch(/^\d+\.\d+\.\d+/);
    }
  });

  it("sends each answer its own X-Request-Id: a static file's, a problem's, a page's and a document's kept as shared answers", async () => {
    for (const path of [
      '/api/convert',
      '/no-such-page',
      '/bot-wall',
      '/bot-wall',
      '/bot-wall.json',
      '/bot-wall.json',
    ]) {
      const id = `reader-${path.length}-${Math.random().toString(36).slice(2)}`;
      const answer = await fetch(`${server.url}${path}`, { headers: { 'X-Request-Id': id } });
      await answer.arrayBuffer();
      // One header, this request's: a shared answer does not carry the id of the reader it was made for.
      expect([path, answer.headers.get('x-request-id')]).toEqual([path, id]);
    }
  });

  it('raises no bot alert for the operator tooling (curl, Wget)', async () => {
    const from = server.logs.length;
    for (const ua of ['curl/8.5.0', 'Wget/1.21.4']) {
      const r = await fetch(`${server.url}/readyz`, { headers: { 'User-Agent': ua } });
      expect(r.status).toBe(200);
    }
    // The request lines are written; no alert line among them.
    await server.waitForLog((l) => /"path":"\/readyz"/.test(l), { from });
    await fetch(`${server.url}/livez`, { headers: { 'X-Request-Id': 'after-tools' } });
    await server.waitForLog((l) => l.includes('"requestId":"after-tools"'), { from });
    expect(server.logs.slice(from).filter((l) => /bot alert/.test(l))).toEqual([]);
  });

  it('says an outage once at error and its end once at info, writes 503 lines at warn without stacks, and /metrics shows it', async () => {
    expect(await (await oath()).status).toBe(201);
    const before = await metrics();
    expect(sample(before, 'agentnode_database_up')).toBe(1);
    expect(before).toMatch(
      /^agentnode_build_info\{version="\d+\.\d+\.\d+[^"]*",commit="[^"]+",node="\d+\.\d+\.\d+"\} 1$/m,
    );
    expect(sample(before, 'agentnode_uptime_seconds')).toBeGreaterThan(0);
    for (const g of ['in_use', 'idle', 'waiting'])
      expect(sample(before, `agentnode_database_pool_${g}`)).toBeGreaterThanOrEqual(0);

    const from = server.logs.length;
    await cluster.halt();
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) answers.push((await oath({ 'X-Request-Id': `outage-${i}` })).status);
    expect(new Set(answers)).toEqual(new Set([503]));
    const during = await metrics();
    expect(sample(during, 'agentnode_database_up')).toBe(0);
    expect(
      sample(during, 'agentnode_http_responses_total{status="503",code="STORE_UNAVAILABLE"}'),
    ).toBeGreaterThanOrEqual(12);
    expect(sample(during, 'agentnode_http_responses_total{status="201",code=""}')).toBeGreaterThanOrEqual(1);

    await cluster.start();
    await waitFor(async () => (await oath()).status, { until: (s) => s === 201, timeoutMs: 15_000, what: 'a 201' });
    await server.waitForLog((l) => /PostgreSQL answers again/.test(l), { from });
    const lines = parsed(server.logs.slice(from));
    const errors = lines.filter((l) => (l.level as number) >= 50);
    expect(errors, 'one error line for the outage').toHaveLength(1);
    expect(errors[0]!.msg).toMatch(/PostgreSQL does not answer/);
    expect(lines.filter((l) => /PostgreSQL answers again/.test(String(l.msg)))).toHaveLength(1);
    expect(
      lines.filter((l) => JSON.stringify(l).includes('"stack"')),
      'no stack for an expected loss',
    ).toEqual([]);
    const outage = lines.filter((l) => l.msg === 'request' && String(l.requestId).startsWith('outage-'));
    expect(outage).toHaveLength(12);
    for (const l of outage) expect(l).toMatchObject({ level: 40, status: 503 });
    expect(sample(await metrics(), 'agentnode_database_up')).toBe(1);
  }, 60_000);
});
