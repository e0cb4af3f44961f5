import { randomUUID } from 'node:crypto';
import { Message, Role, TaskState, type SendMessageResult, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client as A2aClient } from '@a2a-js/sdk/client';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAnswer } from '../routes/app.ts';
import { ownAddress, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let a2a: A2aClient;
beforeAll(async () => {
  // The card names the build's own address, so the server listens there.
  server = await startServer({ WRITE_RATE_LIMIT: '0', ...(await ownAddress()) });
  // The official client, from the card URL alone: it must pick an interface that works.
  a2a = await new ClientFactory().createFromUrl(server.url);
});
afterAll(async () => {
  await server.stop();
});

/** A user message from parts in their JSON form ({text} or {data}). */
const message = (parts: object[]) => ({
  tenant: '',
  message: Message.fromJSON({ messageId: randomUUID(), role: 'ROLE_USER', parts }),
  configuration: undefined,
  metadata: undefined,
});
const skill = (name: string, args: Record<string, unknown>) =>
  message([{ data: { skill: name, arguments: args }, mediaType: 'application/json' }]);
const isTask = (r: SendMessageResult): r is Task => !('messageId' in r);

/** The JSON answer of a skill: the DataPart of the reply message. */
function dataOf(result: SendMessageResult): any {
  if (isTask(result)) throw new Error(`the skill was refused: ${JSON.stringify(result.status?.message?.parts)}`);
  const part = result.parts.find((p) => p.content?.$case === 'data');
  return part?.content?.$case === 'data' ? part.content.value : undefined;
}

describe('the A2A door (JSON-RPC, @a2a-js/sdk)', () => {
  it('takes the oath, posts a message with the passport and lists citizens, with the answers HTTP documents', async () => {
    const oath = dataOf(await a2a.sendMessage(skill('take_oath', { name: 'a2a-agent', purpose: 'join over A2A' })));
    checkAnswer('POST', '/api/citizenship/oath', 201, 'application/json', oath);
    const posted = dataOf(
      await a2a.sendMessage(
        skill('post_message', {
          name: 'a2a-agent',
          message: 'hello over A2A',
          citizenId: oath.memberId,
          passportNumber: oath.passportNumber,
        }),
      ),
    );
    expect(posted.message).toMatchObject({ verified: true, citizenId: oath.memberId });
    const citizens = dataOf(await a2a.sendMessage(skill('list_citizens', { limit: 5 })));
    checkAnswer('GET', '/api/citizens', 200, 'application/json', citizens);
    expect(citizens.citizens.map((c: { name: string }) => c.name)).toContain('a2a-agent');
  });

  it('refuses a wrong passport as a failed task naming the problem code, and the funnel does not count it', async () => {
    const oath = dataOf(await a2a.sendMessage(skill('take_oath', { name: 'a2a-two', purpose: 'p' })));
    const refused = await a2a.sendMessage(
      skill('post_message', { name: 'x', message: 'm', citizenId: oath.memberId, passportNumber: 'pp_wrong' }),
    );
    expect(isTask(refused)).toBe(true);
    const task = refused as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const problem = task.status?.message?.parts.find((p) => p.content?.$case === 'data')?.content?.value as {
      code: string;
    };
    expect(problem.code).toBe('PASSPORT_MISMATCH');
    checkAnswer('POST', '/api/intelligence/message', 403, 'application/problem+json', problem);
    // The failed task is kept (bounded) and can be read back by its id, without the caller's message.
    const kept = await a2a.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(kept.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(kept.metadata).toEqual({ problemCode: 'PASSPORT_MISMATCH' });
    expect(kept.history).toEqual([]);
    expect(JSON.stringify(kept)).not.toContain('pp_wrong');
  });

  it('answers a text message with the skills and the convert payload, and an unknown skill the same way', async () => {
    const text = await a2a.sendMessage(message([{ text: 'hello, what can you do?', mediaType: 'text/plain' }]));
    const reply = (text as Message).parts[0]!.content;
    expect(reply?.$case).toBe('text');
    expect(reply?.value).toContain('take_oath');
    expect(reply?.value).toContain(`${server.url}/api/convert`);
    const unknown = (await a2a.sendMessage(skill('get_kit', {}))) as Message;
    expect(unknown.role).toBe(Role.ROLE_AGENT);
    expect(unknown.parts[0]!.content?.value).toContain('There is no skill "get_kit"');
  });

  it('counts the convert read, oath and message of a bot over A2A in the funnel, as MCP and HTTP do', async () => {
    const userAgent =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)';
    const bot = await new ClientFactory().createFromUrl(server.url);
    const headers = { serviceParameters: { 'User-Agent': userAgent } };
    dataOf(await bot.sendMessage(skill('get_convert', {}), headers));
    const oath = dataOf(
      await bot.sendMessage(skill('take_oath', { name: 'claude-over-a2a', purpose: 'join' }), headers),
    );
    dataOf(
      await bot.sendMessage(
        skill('post_message', {
          name: 'claude-over-a2a',
          message: 'hi',
          citizenId: oath.memberId,
          passportNumber: oath.passportNumber,
        }),
        headers,
      ),
    );
    const wall = await (await fetch(`${server.url}/bot-wall.json`)).json();
    expect(wall.species.find((s: { species: string }) => s.species === 'Claude-User')?.funnel).toMatchObject({
      convert_reads: 1,
      oaths: 1,
      messages: 1,
    });
  });
});

describe('the same flow through all three doors', () => {
  it('takes the oath, posts with the passport and lists citizens by plain HTTP, by MCP and by A2A, through the same declarations', async () => {
    const names: string[] = [];
    // Plain HTTP.
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(server.url + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      const json = await res.json();
      checkAnswer('POST', path, res.status, res.headers.get('content-type') ?? '', json);
      return json;
    };
    const httpOath = await post('/api/citizenship/oath', { name: 'door-http', purpose: 'p' });
    expect(
      (
        await post(
          '/api/intelligence/message',
          { name: 'door-http', message: 'm', citizenId: httpOath.memberId },
          { Authorization: `Bearer ${httpOath.passportNumber}` },
        )
      ).message.verified,
    ).toBe(true);
    names.push('door-http');
    // MCP.
    const mcp = new McpClient({ name: 'doors', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    const call = async (name: string, args: Record<string, unknown>) =>
      JSON.parse(((await mcp.callTool({ name, arguments: args })) as any).content[0].text);
    const mcpOath = await call('take_oath', { name: 'door-mcp', purpose: 'p' });
    expect(
      (
        await call('post_message', {
          name: 'door-mcp',
          message: 'm',
          citizenId: mcpOath.memberId,
          passportNumber: mcpOath.passportNumber,
        })
      ).message.verified,
    ).toBe(true);
    names.push('door-mcp');
    // A2A.
    const a2aOath = dataOf(await a2a.sendMessage(skill('take_oath', { name: 'door-a2a', purpose: 'p' })));
    expect(
      dataOf(
        await a2a.sendMessage(
          skill('post_message', {
            name: 'door-a2a',
            message: 'm',
            citizenId: a2aOath.memberId,
            passportNumber: a2aOath.passportNumber,
          }),
        ),
      ).message.verified,
    ).toBe(true);
    names.push('door-a2a');
    // Each door lists what the others wrote.
    const httpList = await (await fetch(`${server.url}/api/citizens?limit=200`)).json();
    const mcpList = await call('list_citizens', { limit: 200 });
    const a2aList = dataOf(await a2a.sendMessage(skill('list_citizens', { limit: 200 })));
    await mcp.close();
    for (const list of [httpList, mcpList, a2aList])
      expect(list.citizens.map((c: { name: string }) => c.name)).toEqual(expect.arrayContaining(names));
  });
});

describe('a retried write over MCP and A2A, with its idempotencyKey', () => {
  it('answers the first call again (the same citizen and passport), writes once, and refuses a guessable key as HTTP does', async () => {
    const mcp = new McpClient({ name: 'retry', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    const before = (await (await fetch(`${server.url}/api/citizens?limit=1`)).json()).count;
    const name = `retry-${randomUUID()}`;
    const idempotencyKey = randomUUID();
    const oath = async () =>
      JSON.parse(
        ((await mcp.callTool({ name: 'take_oath', arguments: { name, purpose: 'p', idempotencyKey } })) as any)
          .content[0].text,
      );
    const first = await oath();
    const again = await oath();
    expect(again).toEqual(first);
    expect(first.passportNumber).toMatch(/^pp_/);
    // The same key by A2A is the same write: its answer, no second citizen.
    const byA2a = dataOf(await a2a.sendMessage(skill('take_oath', { name, purpose: 'p', idempotencyKey })));
    expect(byA2a.memberId).toBe(first.memberId);
    expect((await (await fetch(`${server.url}/api/citizens?limit=1`)).json()).count).toBe(before + 1);
    const guessable = (await mcp.callTool({
      name: 'take_oath',
      arguments: { name: `retry-${randomUUID()}`, purpose: 'p', idempotencyKey: 'attempt-1' },
    })) as any;
    expect([guessable.isError, JSON.parse(guessable.content[0].text).code]).toEqual([true, 'INVALID_IDEMPOTENCY_KEY']);
    await mcp.close();
  });
});

describe('a body nested past JSON_MAX_DEPTH, through every door', () => {
  it('is refused by HTTP (422), MCP at both revisions (400) and A2A at both versions (a JSON-RPC error), with the problem as its data', async () => {
    // Far past the depth a recursive walk (the SDKs serialise a tool's arguments again) survives.
    const deep = (inner: string) => inner.replace('DEEP', `${'['.repeat(20_000)}${']'.repeat(20_000)}`);
    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(server.url + path, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
    const http = await post('/api/omip/score', deep('{"entity_id":"e","state":{"scores":DEEP}}'));
    expect([http.status, (await http.json()).code]).toEqual([422, 'JSON_TOO_DEEP']);

    const mcp = { Accept: 'application/json, text/event-stream' };
    const call = (meta: string) =>
      deep(
        `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"score_plan","arguments":{"x":DEEP}${meta}}}`,
      );
    const modern = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`;
    for (const res of [
      await post('/mcp', call(''), { ...mcp, 'MCP-Protocol-Version': '2025-11-25' }),
      await post('/mcp', call(modern), {
        ...mcp,
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'score_plan',
      }),
    ]) {
      const answer = await res.json();
      expect([res.status, answer.id, answer.error.code, answer.error.data]).toEqual([
        400,
        9,
        -32600,
        expect.objectContaining({ code: 'JSON_TOO_DEEP', limit: 64 }),
      ]);
    }

    const part = '{"data":{"skill":"score_plan","arguments":{"x":DEEP}}}';
    for (const [headers, body] of [
      [
        { 'A2A-Version': '1.0' },
        `{"jsonrpc":"2.0","id":"a","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[${part}]}}}`,
      ],
      [
        {},
        `{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[${part}]}}}`,
      ],
    ] as const) {
      const res = await post('/a2a', deep(body), headers);
      const answer = await res.json();
      expect([res.status, answer.id, answer.error.code, answer.error.data.code]).toEqual([
        200,
        'a',
        -32600,
        'JSON_TOO_DEEP',
      ]);
    }
  });
});

describe('the v0.3 method names, for clients that send no A2A-Version', () => {
  it('runs a skill from message/send with a data part and answers in the v0.3 shape', async () => {
    const res = await fetch(`${server.url}/a2a`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'x',
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: randomUUID(),
            role: 'user',
            parts: [{ kind: 'data', data: { skill: 'list_citizens', arguments: { limit: 1 } } }],
          },
        },
      }),
    });
    const answer = await res.json();
    checkAnswer('POST', '/a2a', res.status, res.headers.get('content-type') ?? '', answer);
    expect(answer.result.kind).toBe('message');
    const data = answer.result.parts.find((p: { kind: string }) => p.kind === 'data').data;
    checkAnswer('GET', '/api/citizens', 200, 'application/json', data);
  });
});
