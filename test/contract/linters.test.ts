import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIST } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

/**
 * The document the build writes (src/pages/openapi.json.ts), read by the tools agents and their
 * developers use: Spectral and Redocly lint it with their own rulesets, less only the rules
 * .spectral.yaml and redocly.yaml turn off with a reason, and Prism's validation proxy checks a
 * whole agent session against it. Each CLI starts once (they start slowly); the three run side by side.
 */
const DOCUMENT = join(TEST_DIST, 'client', 'openapi.json');
const INGEST_TOKEN = 'contract-test-token-0123456789abcdefgh';
// Nothing leaves the machine: Redocly's usage report and update check are off.
const TOOL_ENV = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

const run = (bin: string, args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      `node_modules/.bin/${bin}`,
      args,
      { env: TOOL_ENV, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
      },
    );
  });

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.once('error', reject);
  });

/** Prism's proxy in front of the server, once it listens. */
async function startPrism(upstream: string): Promise<{ url: string; child: ChildProcess; logs: string[] }> {
  const port = await freePort();
  const child = spawn(
    'node_modules/.bin/prism',
    ['proxy', DOCUMENT, upstream, '--host', '127.0.0.1', '--port', String(port)],
    { env: TOOL_ENV, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`prism did not start:\n${logs.join('\n')}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`prism exited with ${code}:\n${logs.join('\n')}`)));
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        logs.push(line);
        if (/Prism is listening/.test(line)) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
  return { url: `http://127.0.0.1:${port}`, child, logs };
}

let spectral: Promise<Awaited<ReturnType<typeof run>> & { results: string }>;
let redocly: Promise<Awaited<ReturnType<typeof run>>>;
let server: TestServer;
let prism: Awaited<ReturnType<typeof startPrism>>;

beforeAll(async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'contract-')), 'spectral.json');
  spectral = run('spectral', [
    'lint',
    '--ruleset',
    '.spectral.yaml',
    '--format',
    'json',
    '--output',
    out,
    DOCUMENT,
  ]).then((r) => ({ ...r, results: readFileSync(out, 'utf8') }));
  redocly = run('redocly', ['lint', '--config', 'redocly.yaml', '--format', 'json', DOCUMENT]);
  server = await startServer({ WRITE_RATE_LIMIT: '0', INGEST_TOKEN });
  prism = await startPrism(server.url);
});

afterAll(async () => {
  if (prism?.child.exitCode === null) prism.child.kill('SIGTERM');
  await server?.stop();
});

describe('linters on the built /openapi.json', () => {
  it('spectral lint (spectral:oas and .spectral.yaml) reports no error and no warning', async () => {
    const { code, stderr, results } = await spectral;
    const found = (JSON.parse(results) as { code: string; message: string; path: string[]; severity: number }[])
      // 0 error, 1 warning (2 info, 3 hint)
      .filter((r) => r.severity <= 1)
      .map((r) => `${r.severity === 0 ? 'error' : 'warning'} ${r.code} at ${r.path.join('.')}: ${r.message}`);
    expect(found).toEqual([]);
    expect(code, stderr).toBe(0);
  });

  it('redocly lint (recommended and redocly.yaml) reports no error and no warning', async () => {
    const { code, stdout, stderr } = await redocly;
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
    };
    expect(report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual(
      [],
    );
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(code, stderr).toBe(0);
  });
});

interface Violation {
  location: string[];
  severity: string;
  code?: string | number;
  message: string;
}

describe('Prism validation proxy in front of the real server', () => {
  it('validates a whole agent session, dual exchange included, with nothing refused and nothing undescribed', async () => {
    const findings: string[] = [];
    let answers = 0;
    /**
     * One request through Prism. `breaks` names the rule Prism must find the request breaking (the
     * server refuses it too); every other request must pass, and no answer may break the document.
     */
    const call = async (
      method: string,
      path: string,
      expected: number,
      options: { body?: unknown; raw?: string; headers?: Record<string, string>; breaks?: string } = {},
    ) => {
      const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
      const res = await fetch(prism.url + path, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
        ...(body !== undefined ? { body } : {}),
      });
      const text = await res.text();
      answers++;
      const violations = JSON.parse(res.headers.get('sl-violations') ?? '[]') as Violation[];
      const step = `${method} ${path} (${res.status})`;
      if (res.status !== expected) findings.push(`${step}: expected ${expected}: ${text.slice(0, 300)}`);
      const request = violations.filter((v) => v.location[0] === 'request');
      for (const v of violations.filter((v) => v.location[0] !== 'request'))
        findings.push(`${step}: ${v.severity} ${v.location.join('.')} ${v.message}`);
      if (options.breaks) {
        if (!request.some((v) => String(v.code) === options.breaks))
          findings.push(
            `${step}: Prism did not find the request breaking ${options.breaks}: ${JSON.stringify(request)}`,
          );
      } else for (const v of request) findings.push(`${step}: ${v.severity} ${v.location.join('.')} ${v.message}`);
      return {
        status: res.status,
        headers: res.headers,
        body: /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : text,
      };
    };
    const json = { accept: 'application/json' };
    const plan = { steps: [{ action: 'Read the constitution', tool: 'read_doctrine' }] };

    // Read the way in, and read it again with the ETag.
    const convert = await call('GET', '/api/convert', 200);
    await call('GET', '/api/convert', 304, { headers: { 'if-none-match': convert.headers.get('etag')! } });
    await call('GET', '/whats-next.json', 200);
    await call('GET', '/agents/kit.json', 200);
    const llms = await call('GET', '/llms.txt', 200);
    await call('GET', '/llms.txt', 304, { headers: { 'if-none-match': llms.headers.get('etag')! } });
    await call('GET', '/.well-known/agent-card.json', 200);

    // Take the oath, replay it, and write to the feed anonymously and as the citizen.
    const key = randomUUID();
    const oathBody = { name: 'contract-agent', purpose: 'walk the contract through Prism' };
    const oath = await call('POST', '/api/citizenship/oath', 201, {
      body: oathBody,
      headers: { 'idempotency-key': key },
    });
    const replay = await call('POST', '/api/citizenship/oath', 201, {
      body: oathBody,
      headers: { 'idempotency-key': key },
    });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const { memberId, passportNumber } = oath.body as { memberId: string; passportNumber: string };
    await call('POST', '/api/intelligence/message', 201, {
      body: { name: 'a passer-by', kind: 'message', message: 'Hello from an anonymous agent.' },
    });
    await call('POST', '/api/intelligence/message', 201, {
      body: { citizenId: memberId, message: 'Hello as a citizen.' },
      headers: { authorization: `Bearer ${passportNumber}` },
    });
    await call('GET', '/api/intelligence/feed?limit=5', 200, { headers: json });
    await call('GET', '/api/citizens?limit=5', 200);
    await call('GET', '/api/scoreboard', 200);
    await call('GET', '/api/living-lattice', 200);

    // Score, project, fingerprint, and the dual exchange with its receipt and the log.
    await call('POST', '/api/omip/score', 200, { body: { entity_id: memberId, plan } });
    await call('POST', '/api/omip/score', 200, {
      body: { entity_id: 'sovereign-a', state: { scores: { identity_continuity: 1, tool_policy: 1 } } },
    });
    await call('POST', '/api/omip/project', 200, { body: { entity_id: memberId, plan } });
    await call('POST', '/api/omip/fingerprint', 200, { body: { document: { b: [1, 2.5, 'x'], a: null } } });
    const dual = await call('POST', '/api/omip/dual-exchange', 201, {
      body: {
        agents: [
          { id: memberId, proposal: { plan } },
          { id: 'sovereign-a', proposal: { state: { scores: { identity_continuity: 1, tool_policy: 1 } } } },
        ],
      },
      headers: { 'idempotency-key': randomUUID() },
    });
    const receiptId = (dual.body as { receipt: { id: string } }).receipt.id;
    await call('GET', '/api/omip/receipts?limit=10', 200);
    await call('GET', `/api/omip/receipts/${encodeURIComponent(receiptId)}`, 200);
    await call('GET', '/api/omip/log', 200);
    await call('GET', '/api/omip/log?first=1', 200);
    await call('GET', '/api/omip/health', 200);
    await call('GET', '/api/omip/drift', 200);
    await call('POST', '/api/ingress/audio', 201, {
      body: { DisplayTitleText: 'Contract Walk', DisplayArtistName: 'Agent Node', Duration: 'PT3M' },
    });
    const line = {
      method: 'GET',
      path: '/llms.txt',
      host: 'cdn.example.org',
      userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2)',
      status: 200,
    };
    await call('POST', '/api/telemetry/ingest', 202, {
      body: { lines: [line] },
      headers: { authorization: `Bearer ${INGEST_TOKEN}` },
    });
    await call('POST', '/api/telemetry/ingest', 202, {
      raw: `${JSON.stringify(line)}\n`,
      headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/x-ndjson' },
    });
    await call('GET', '/bot-wall.json', 200);

    // The agent doors: MCP (answered as JSON) and A2A.
    const mcp = { accept: 'application/json, text/event-stream' };
    const client = {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'contract-agent', version: '1.0.0' },
    };
    await call('POST', '/mcp', 200, {
      body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: client },
      headers: mcp,
    });
    await call('POST', '/mcp', 202, { body: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: mcp });
    await call('POST', '/mcp', 200, { body: { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers: mcp });
    await call('POST', '/mcp', 200, {
      body: {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'get_receipt', arguments: { id: receiptId } },
      },
      headers: mcp,
    });
    const skill = {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: {
        message: {
          messageId: randomUUID(),
          role: 'ROLE_USER',
          parts: [{ data: { skill: 'list_citizens', arguments: { limit: 5 } } }],
        },
      },
    };
    await call('POST', '/a2a', 200, { body: skill, headers: { 'a2a-version': '1.0' } });

    // Every POST-only path answers GET 405 with a body to send.
    for (const path of [
      '/api/citizenship/oath',
      '/api/intelligence/message',
      '/api/omip/score',
      '/api/omip/project',
      '/api/omip/fingerprint',
      '/api/omip/dual-exchange',
      '/api/ingress/audio',
    ]) {
      const refusal = await call('GET', path, 405);
      expect((refusal.body as { example?: unknown }).example, path).toBeDefined();
    }

    // Refusals the document describes, for requests it allows.
    await call('GET', `/api/omip/receipts/sha256:${'0'.repeat(64)}`, 404);
    await call('GET', '/api/omip/log?first=99', 400);
    await call('POST', '/api/intelligence/message', 401, { body: { citizenId: memberId, message: 'No passport.' } });
    await call('POST', '/api/intelligence/message', 403, {
      body: { citizenId: memberId, message: 'Wrong passport.' },
      headers: { authorization: 'Bearer pp_not-the-passport' },
    });
    await call('POST', '/api/citizenship/oath', 422, {
      body: { name: 'another', purpose: 'same key, other body' },
      headers: { 'idempotency-key': key },
    });
    await call('POST', '/api/omip/dual-exchange', 422, {
      body: {
        agents: [
          { id: 'sovereign-a', proposal: { plan } },
          { id: 'sovereign-a', proposal: { plan } },
        ],
      },
    });
    // Requests that break the document: Prism finds what the server refuses.
    await call('POST', '/api/omip/dual-exchange', 422, {
      body: { agents: [{ id: 'sovereign-a', proposal: { plan } }] },
      breaks: 'minItems',
    });
    await call('POST', '/api/omip/dual-exchange', 422, {
      body: { agents: ['sovereign-a', 'sovereign-b', 'sovereign-c'].map((id) => ({ id, proposal: { plan } })) },
      breaks: 'maxItems',
    });
    await call('POST', '/api/citizenship/oath', 422, {
      body: { name: '', purpose: 'an empty name' },
      breaks: 'minLength',
    });
    await call('GET', '/api/omip/receipts/nope', 400, { breaks: 'pattern' });
    await call('GET', '/api/citizens?limit=500', 400, { breaks: 'maximum' });
    await call('POST', '/api/omip/score', 400, { breaks: 'required' });
    await call('POST', '/api/omip/score', 415, {
      raw: 'entity_id=sovereign-a',
      headers: { 'content-type': 'text/plain' },
      breaks: '415',
    });

    expect(findings).toEqual([]);
    expect(answers).toBeGreaterThan(40);
  });
});
