import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../api/operations/table.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { METRICS_TOKEN } from './probe.ts';

// "Protocol doors keep nothing secret": a message sent with a citizen's passport, refused
// or not, through HTTP, MCP or A2A, leaves the passport nowhere: no public read (A2A tasks
// included), no log line, no file of the data folder, no PostgreSQL row. A2A shows a task only to
// the caller that holds its id, and the methods it does not offer answer A2A's own error.

const pgAvailable = await postgresAvailable();
afterAll(async () => {
  if (pgAvailable) await dropDatabases();
});

/** Small enough to reach 429 in a few calls, large enough for each door's other calls. */
const WRITE_LIMIT = 12;

interface Answer {
  status: number;
  text: string;
  json: any;
}

/** One request from `from`, an address of the loopback /8: each is a client of its own. */
function send(
  server: TestServer,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; from: string },
): Promise<Answer> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        localAddress: options.from,
        headers: options.headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const postJson = (
  server: TestServer,
  path: string,
  body: unknown,
  from: string,
  headers: Record<string, string> = {},
) =>
  send(server, path, {
    method: 'POST',
    from,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A passport-shaped string that is nobody's: sent as a wrong passport, it is a secret too. */
const fakePassport = () => `pp_${randomBytes(32).toString('base64url')}`;

/** The doors, as a client uses them; each returns the operation's status and JSON answer. */
function doors(server: TestServer) {
  let rpcId = 0;
  const mcp = async (from: string, method: string, params: unknown) =>
    postJson(server, '/mcp', { jsonrpc: '2.0', id: ++rpcId, method, params }, from, {
      Accept: 'application/json, text/event-stream',
    });
  const a2a = async (from: string, method: string, params: unknown, version?: '1.0') =>
    postJson(
      server,
      '/a2a',
      { jsonrpc: '2.0', id: ++rpcId, method, params },
      from,
      version ? { 'A2A-Version': version } : {},
    );
  return {
    mcp,
    a2a,
    /** A tool call over MCP: the operation's status, read from the problem when it is refused. */
    async tool(from: string, name: string, args: Record<string, unknown>): Promise<{ status: number; body: any }> {
      const answer = await mcp(from, 'tools/call', { name, arguments: args });
      const body = JSON.parse(answer.json.result.content[0].text);
      return { status: answer.json.result.isError ? body.status : 200, body };
    },
    /** A skill over A2A (v1.0 SendMessage, or v0.3 message/send): the task id when it was refused. */
    async skill(
      from: string,
      name: string,
      args: Record<string, unknown>,
      version: '1.0' | '0.3',
      message: Record<string, unknown> = {},
    ): Promise<{ status: number; body: any; taskId?: string }> {
      const data = { skill: name, arguments: args };
      const answer =
        version === '1.0'
          ? await a2a(
              from,
              'SendMessage',
              {
                message: {
                  messageId: randomUUID(),
                  role: 'ROLE_USER',
                  parts: [{ data, mediaType: 'application/json' }],
                  ...message,
                },
              },
              '1.0',
            )
          : await a2a(from, 'message/send', {
              message: {
                kind: 'message',
                messageId: randomUUID(),
                role: 'user',
                parts: [{ kind: 'data', data }],
                ...message,
              },
            });
      const result = answer.json.result;
      if (version === '1.0' && result.message) return { status: 200, body: result.message.parts[0].data };
      if (version === '0.3' && result.kind === 'message') return { status: 200, body: result.parts[0].data };
      const task = version === '1.0' ? result.task : result;
      const parts = task.status.message.parts as { data?: any }[];
      const problem = parts.find((p) => p.data)!.data;
      return { status: problem.status, body: problem, taskId: task.id };
    },
  };
}

/** Every file under a folder, as text. */
async function filesUnder(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(path, (await readFile(path)).toString('latin1'));
  }
  return files;
}

/** Every row of every table of a database, as text, by table. */
async function tablesOf(databaseUrl: string): Promise<Map<string, string>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ schema: string; name: string }>(
      "SELECT table_schema AS schema, table_name AS name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')",
    );
    const dump = new Map<string, string>();
    for (const { schema, name } of tables) {
      const { rows } = await client.query<{ row: string }>(
        `SELECT t::text AS row FROM ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)} t`,
      );
      dump.set(`table ${schema}.${name} (${rows.length} rows)`, rows.map((r) => r.row).join('\n'));
    }
    return dump;
  } finally {
    await client.end();
  }
}

/** The places (name -> text) that hold any of the secrets, named with the secret found. */
function leaks(places: Map<string, string>, secrets: string[]): string[] {
  // The random part alone: a passport kept without its "pp_" prefix is still the passport.
  const cores = secrets.map((s) => s.replace(/^pp_/, ''));
  return [...places].flatMap(([name, text]) =>
    cores.filter((c) => text.includes(c)).map((c) => `${name} holds …${c.slice(-8)}`),
  );
}

/**
 * Sends, through each door from an address of its own, a message with citizenId and passport that
 * is accepted, one with a wrong name, one naming another citizen, one with a wrong passport, one
 * that fails validation, and then the same message until the write limit answers 429. Returns the
 * secrets sent and the A2A task ids the answers named.
 */
async function sendCredentialedCalls(server: TestServer): Promise<{ secrets: string[]; taskIds: string[] }> {
  const door = doors(server);
  const secrets: string[] = [];
  const taskIds: string[] = [];
  const memberIds: string[] = [];
  const other = (
    await postJson(server, '/api/citizenship/oath', { name: 'bystander', purpose: 'be named by others' }, '127.0.1.9')
  ).json;
  secrets.push(other.passportNumber);

  type Call = (
    args: Record<string, unknown>,
    passport: string,
  ) => Promise<{ status: number; body: any; taskId?: string }>;
  /** A citizen sworn in through one door, then every kind of credentialed call through it. */
  async function attempts(name: string, oath: () => Promise<any>, call: Call): Promise<void> {
    const citizen = await oath();
    expect(citizen.passportNumber, name).toMatch(/^pp_/);
    memberIds.push(citizen.memberId);
    const wrong = fakePassport();
    secrets.push(citizen.passportNumber, wrong);
    const as = { citizenId: citizen.memberId };
    const codes: string[] = [];
    const record = async (args: Record<string, unknown>, passport: string) => {
      const answer = await call(args, passport);
      if (answer.taskId) taskIds.push(answer.taskId);
      codes.push(answer.status < 400 ? 'accepted' : answer.body.code);
      return answer;
    };
    expect((await record({ ...as, message: 'accepted' }, citizen.passportNumber)).body.message.verified, name).toBe(
      true,
    );
    await record({ ...as, name: 'somebody-else', message: 'wrong name' }, citizen.passportNumber);
    await record({ citizenId: other.memberId, message: 'another citizen' }, citizen.passportNumber);
    await record({ ...as, message: 'wrong passport' }, wrong);
    await record({ ...as, message: '' }, citizen.passportNumber);
    expect(codes, name).toEqual([
      'accepted',
      'NAME_MISMATCH',
      'PASSPORT_MISMATCH',
      'PASSPORT_MISMATCH',
      'VALIDATION_FAILED',
    ]);
    for (let i = 0; i < WRITE_LIMIT + 2 && !codes.includes('RATE_LIMITED'); i++)
      await record({ ...as, message: `until the limit ${i}` }, citizen.passportNumber);
    expect(codes, `${name} reached the write limit`).toContain('RATE_LIMITED');
  }

  // HTTP: the passport is the Authorization header; a client that puts it in the body is refused too.
  const http = '127.0.1.1';
  await attempts(
    'HTTP',
    async () => (await postJson(server, '/api/citizenship/oath', { name: 'secret-http', purpose: 'p' }, http)).json,
    async (args, passport) => {
      const answer = await postJson(server, '/api/intelligence/message', args, http, {
        Authorization: `Bearer ${passport}`,
      });
      return { status: answer.status, body: answer.json };
    },
  );
  const httpPassport = secrets.at(-2)!;
  const inBody = await postJson(
    server,
    '/api/intelligence/message',
    { message: 'm', citizenId: memberIds[0], passportNumber: httpPassport },
    '127.0.1.4',
  );
  expect(inBody.status).toBeGreaterThanOrEqual(400);
  const broken = await postJson(
    server,
    '/api/intelligence/message',
    `{"message":"m","passportNumber":"${httpPassport}"`,
    '127.0.1.4',
    { Authorization: `Bearer ${httpPassport}` },
  );
  expect(broken.status).toBe(400);

  // MCP: the passport is the passportNumber argument of post_message.
  const mcp = '127.0.1.2';
  await attempts(
    'MCP',
    async () => (await door.tool(mcp, 'take_oath', { name: 'secret-mcp', purpose: 'p' })).body,
    (args, passport) => door.tool(mcp, 'post_message', { ...args, passportNumber: passport }),
  );

  // A2A v1.0 and v0.3: the passport is the passportNumber argument of the post_message skill.
  for (const [version, from] of [
    ['1.0', '127.0.1.3'],
    ['0.3', '127.0.1.5'],
  ] as const) {
    await attempts(
      `A2A ${version}`,
      async () => (await door.skill(from, 'take_oath', { name: `secret-a2a-${version}`, purpose: 'p' }, version)).body,
      (args, passport) => door.skill(from, 'post_message', { ...args, passportNumber: passport }, version),
    );
  }
  // Each refusal over A2A named a task: 2 versions × (4 refusals + 429).
  expect(taskIds.length).toBeGreaterThanOrEqual(10);
  return { secrets, taskIds };
}

/** Every read anyone may make, from an address that sent none of the calls: path -> answer. */
async function publicReads(server: TestServer, taskIds: string[]): Promise<Map<string, string>> {
  const door = doors(server);
  const reader = '127.0.2.1';
  const reads = new Map<string, string>();
  const get = async (path: string, headers: Record<string, string> = {}) =>
    reads.set(`GET ${path}`, (await send(server, path, { from: reader, headers })).text);
  const manifest = JSON.parse(await readFile(join(TEST_DIST, 'static-manifest.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  for (const path of Object.keys(manifest)) await get(path);
  for (const op of OPERATIONS.filter((o) => o.method === 'GET')) {
    // A receipt is the only read by id, and no call here made one.
    const path = op.path.replace(/\{\w+\}/g, 'none');
    await get(path);
    await get(`${path}?limit=200`);
  }
  for (const path of ['/livez', '/readyz']) await get(path);
  await get('/metrics', { Authorization: `Bearer ${METRICS_TOKEN}` });
  expect(reads.get('GET /metrics')).toMatch(/^# (HELP|TYPE)/m);
  // MCP reads: the tool list and every tool that changes nothing.
  reads.set('MCP tools/list', (await door.mcp(reader, 'tools/list', {})).text);
  for (const op of OPERATIONS.filter((o) => o.method === 'GET' && o.tool?.mcp)) {
    reads.set(
      `MCP ${op.tool!.name}`,
      (
        await door.mcp(reader, 'tools/call', {
          name: op.tool!.name,
          arguments: op.path.includes('{') ? { id: 'x' } : { limit: 200 },
        })
      ).text,
    );
  }
  // A2A reads: the list, and every task any answer named, by v1.0 and v0.3.
  reads.set(
    'A2A ListTasks',
    (await door.a2a(reader, 'ListTasks', { pageSize: 100, includeArtifacts: true }, '1.0')).text,
  );
  reads.set('A2A list_citizens', JSON.stringify(await door.skill(reader, 'list_citizens', { limit: 200 }, '1.0')));
  for (const id of taskIds) {
    const task = await door.a2a(reader, 'GetTask', { id }, '1.0');
    expect(task.json.result?.id, 'a refused call is kept as a task its id reads').toBe(id);
    reads.set(`A2A GetTask ${id}`, task.text);
    reads.set(`A2A tasks/get ${id}`, (await door.a2a(reader, 'tasks/get', { id })).text);
  }
  // The reads were made, not empty by accident: the feed lists the verified messages.
  expect(reads.get('GET /api/intelligence/feed?limit=200')).toContain('"verified":true');
  return reads;
}

async function keepsNoSecret(env: Record<string, string>): Promise<void> {
  const server = await startServer({ WRITE_RATE_LIMIT: String(WRITE_LIMIT), METRICS_TOKEN, LOG_LEVEL: 'info', ...env });
  let secrets: string[];
  try {
    const sent = await sendCredentialedCalls(server);
    secrets = sent.secrets;
    const reads = await publicReads(server, sent.taskIds);
    expect(leaks(reads, secrets), 'public reads').toEqual([]);
  } finally {
    // Stopped first: the journal, the snapshot and the log are then complete.
    await server.stop();
  }
  expect(server.logs.length).toBeGreaterThan(20);
  expect(leaks(new Map(server.logs.map((line, i) => [`log line ${i + 1}`, line])), secrets), 'log lines').toEqual([]);
  // Refusals and 429s are the client's: none is logged as an error.
  expect(server.logs.filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
  const files = await filesUnder(server.dataDir);
  if (!env.DATABASE_URL)
    expect([...files.values()].join('\n'), 'the data folder holds the messages').toContain('until the limit');
  expect(leaks(files, secrets), 'the data folder').toEqual([]);
  if (env.DATABASE_URL) {
    const tables = await tablesOf(env.DATABASE_URL);
    expect([...tables.values()].join('\n'), 'the tables hold the messages').toContain('until the limit');
    expect(leaks(tables, secrets), 'PostgreSQL tables').toEqual([]);
  }
}

describe('no door keeps a passport', () => {
  it('after accepted, wrong, refused and over-limit calls through HTTP, MCP and A2A, no public read, log line or data file holds a passport', async () => {
    await keepsNoSecret({});
  });

  it.runIf(pgAvailable)('on PostgreSQL, the same, and no row of any table holds one', async () => {
    await keepsNoSecret({ DATABASE_URL: await freshDatabase() });
  });
});

describe('A2A tasks and the methods the door does not offer', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('shows a task only to the caller that holds its id: another caller cannot list, guess, read by context or attach to it', async () => {
    const door = doors(server);
    const [first, second] = ['127.0.3.1', '127.0.3.2'];
    const contextId = `shared-${randomUUID()}`;
    const messageId = randomUUID();
    const refused = await door.skill(first, 'post_message', { message: '' }, '1.0', { contextId, messageId });
    expect(refused.status).toBe(422);
    const taskId = refused.taskId!;
    // The id is the server's own random UUID v4, made of nothing the caller sent.
    expect(taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([contextId, messageId]).not.toContain(taskId);
    const own = await door.a2a(first, 'GetTask', { id: taskId }, '1.0');
    expect(own.json.result).toMatchObject({
      id: taskId,
      contextId,
      status: { state: 'TASK_STATE_FAILED' },
      metadata: { problemCode: 'VALIDATION_FAILED' },
    });
    expect(own.json.result.history ?? []).toEqual([]);

    // Listing shows no task, to the second caller nor to the first (no caller is known to own one).
    for (const from of [second, first]) {
      for (const params of [{}, { contextId }, { status: 'TASK_STATE_FAILED' }]) {
        const list = await door.a2a(from, 'ListTasks', params, '1.0');
        expect(list.json.result, JSON.stringify(params)).toMatchObject({ tasks: [], totalSize: 0 });
      }
    }
    // What the second caller could know or guess names no task.
    for (const id of [
      contextId,
      messageId,
      taskId.toUpperCase(),
      taskId.slice(0, -1) + (taskId.endsWith('0') ? '1' : '0'),
    ]) {
      expect((await door.a2a(second, 'GetTask', { id }, '1.0')).json.error?.code, id).toBe(
        A2A_ERROR_CODE.TASK_NOT_FOUND,
      );
      expect((await door.a2a(second, 'tasks/get', { id })).json.error?.code, id).toBe(A2A_ERROR_CODE.TASK_NOT_FOUND);
    }
    // Attaching to it (its id, or its context) neither changes it nor hands it over.
    const marker = `attached-${randomUUID()}`;
    const attach = await door.a2a(
      second,
      'SendMessage',
      { message: { messageId: randomUUID(), role: 'ROLE_USER', taskId, parts: [{ text: marker }] } },
      '1.0',
    );
    expect(attach.json.error?.code).toBe(A2A_ERROR_CODE.UNSUPPORTED_OPERATION);
    const legacyAttach = await door.a2a(second, 'message/send', {
      message: {
        kind: 'message',
        messageId: randomUUID(),
        role: 'user',
        taskId,
        parts: [{ kind: 'text', text: marker }],
      },
    });
    expect(legacyAttach.json.error?.code).toBe(A2A_ERROR_CODE.UNSUPPORTED_OPERATION);
    const sameContext = await door.skill(second, 'post_message', { message: '', name: marker }, '1.0', { contextId });
    expect(sameContext.taskId).not.toBe(taskId);
    const after = await door.a2a(first, 'GetTask', { id: taskId }, '1.0');
    expect(after.text).not.toContain(marker);
    expect(after.json.result).toEqual(own.json.result);
  });

  it('answers streaming and resubscription with A2A UnsupportedOperationError in a 200 JSON-RPC answer, and no client mistake at either door logs an error', async () => {
    const door = doors(server);
    const from = '127.0.4.1';
    const from0 = server.logs.length;
    const refused = await door.skill(from, 'post_message', { message: '' }, '1.0');
    const message = (text: string) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });
    const legacyMessage = (text: string) => ({
      kind: 'message',
      messageId: randomUUID(),
      role: 'user',
      parts: [{ kind: 'text', text }],
    });
    const unsupported: [string, unknown, '1.0' | undefined][] = [
      ['SendStreamingMessage', { message: message('stream please') }, '1.0'],
      ['SubscribeToTask', { id: refused.taskId }, '1.0'],
      ['SubscribeToTask', { id: randomUUID() }, '1.0'],
      ['message/stream', { message: legacyMessage('stream please') }, undefined],
      ['tasks/resubscribe', { id: refused.taskId }, undefined],
    ];
    for (const [method, params, version] of unsupported) {
      const answer = await door.a2a(from, method, params, version);
      expect(answer.status, method).toBe(200);
      expect(answer.json, method).toMatchObject({
        jsonrpc: '2.0',
        error: { code: A2A_ERROR_CODE.UNSUPPORTED_OPERATION },
      });
      expect(answer.json.id, method).toEqual(expect.any(Number));
    }
    // Other mistakes, each answered in its protocol and never 5xx.
    const mistakes: [string, () => Promise<Answer>][] = [
      ['A2A not JSON', () => postJson(server, '/a2a', '{"jsonrpc":', from, { 'A2A-Version': '1.0' })],
      ['A2A unknown method', () => door.a2a(from, 'NoSuchMethod', {}, '1.0')],
      ['A2A cancel a failed task', () => door.a2a(from, 'CancelTask', { id: refused.taskId }, '1.0')],
      ['A2A unknown task', () => door.a2a(from, 'GetTask', { id: randomUUID() }, '1.0')],
      [
        'A2A push config',
        () =>
          door.a2a(
            from,
            'CreateTaskPushNotificationConfig',
            { taskId: refused.taskId, url: 'http://127.0.0.1:9/hook' },
            '1.0',
          ),
      ],
      ['A2A extended card', () => door.a2a(from, 'GetExtendedAgentCard', {}, '1.0')],
      [
        'A2A referenced tasks unknown',
        () =>
          door.a2a(
            from,
            'SendMessage',
            { message: { ...message('hi'), referenceTaskIds: ['nobody\nforged line', randomUUID()] } },
            '1.0',
          ),
      ],
      [
        'A2A argument with no text form',
        () =>
          door.a2a(
            from,
            'SendMessage',
            {
              message: {
                ...message(''),
                parts: [{ data: { skill: 'get_receipt', arguments: { id: { toString: 1 } } } }],
              },
            },
            '1.0',
          ),
      ],
      ['A2A unknown version', () => door.a2a(from, 'SendMessage', { message: message('hi') }, '9.9' as '1.0')],
      [
        'MCP not JSON',
        () => postJson(server, '/mcp', '{"jsonrpc":', from, { Accept: 'application/json, text/event-stream' }),
      ],
      ['MCP unknown tool', () => door.mcp(from, 'tools/call', { name: 'no_such_tool', arguments: {} })],
      ['MCP arguments not an object', () => door.mcp(from, 'tools/call', { name: 'post_message', arguments: ['x'] })],
      [
        'MCP argument with no text form',
        () => door.mcp(from, 'tools/call', { name: 'get_receipt', arguments: { id: { toString: 1 } } }),
      ],
      ['MCP no Accept', () => postJson(server, '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, from)],
    ];
    for (const [what, call] of mistakes) {
      const answer = await call();
      expect(answer.status, what).toBeLessThan(500);
      if (what.startsWith('A2A')) expect(answer.json?.error ?? answer.json?.result, what).toBeDefined();
      // A refused argument is the operation's own problem, as over HTTP, not an internal error.
      if (what.includes('no text form')) expect(answer.text, what).toContain('BAD_PATH');
    }
    // A later request's line proves every line before it is printed.
    const marker = `/api/after-the-mistakes-${randomUUID()}`;
    await send(server, marker, { from });
    await server.waitForLog((line) => line.includes(marker), { from: from0 });
    const lines = server.logs.slice(from0);
    const unexpected = lines.filter((line) => {
      try {
        return JSON.parse(line).level >= 50;
      } catch {
        // Not one of our JSON lines: printed by a library (a stack, a warning) around the logger.
        return true;
      }
    });
    expect(unexpected).toEqual([]);
  });
});
