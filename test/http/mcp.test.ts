import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { checkAnswer } from '../helpers/answers.ts';

let server: TestServer;
let client: Client;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0' });
  client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
});
afterAll(async () => {
  await client?.close();
  await server.stop();
});

const parsed = (result: any) => JSON.parse(result.content[0].text);

describe('/mcp (Model Context Protocol, stateless Streamable HTTP)', () => {
  it('says its tool list never changes (a stateless server cannot notify)', () => {
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: false });
  });

  it('answers a call of an unknown tool with the JSON-RPC error -32602, as the 2025-11-25 specification asks', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'no_such_tool', arguments: {} },
      }),
    });
    const answer = await res.json();
    expect([res.status, answer.error.code, answer.id]).toEqual([200, -32602, 7]);
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/-32602|Unknown tool/);
  });

  it('answers a body that is not JSON-RPC 400 with a JSON-RPC error, as documented', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: '{"hello":1}',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await res.json()).error.code).toEqual(expect.any(Number));
  });

  it('lists the convert payload tools with input schemas from the same zod schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'dual_exchange',
      'get_convert',
      'get_kit',
      'get_receipt',
      'get_whats_next',
      'list_citizens',
      'post_message',
      'score_plan',
      'take_oath',
    ]);
    const oath = tools.find((t) => t.name === 'take_oath')!;
    expect(oath.inputSchema.required).toEqual(expect.arrayContaining(['name', 'purpose']));
    expect(JSON.stringify(oath.inputSchema)).toContain('"maxLength":100');
  });

  it('lists the same tools as the convert payload, the kit, llms.txt and the agent card', async () => {
    const mcp = (await client.listTools()).tools.map((t) => t.name).sort();
    const get = async (path: string) => (await fetch(server.url + path)).text();
    const convert = JSON.parse(await get('/api/convert'))
      .tools.map((t: any) => t.name)
      .sort();
    const kit = JSON.parse(await get('/agents/kit.json'))
      .tools.map((t: any) => t.name)
      .sort();
    const card = JSON.parse(await get('/.well-known/agent-card.json'))
      .skills.map((s: any) => s.id)
      .sort();
    // The card lists the tools that are A2A skills: every tool but the two documents an agent reads first.
    expect(card).toEqual(mcp.filter((n) => n !== 'get_kit' && n !== 'get_whats_next'));
    const llms = [...(await get('/llms.txt')).matchAll(/^- \[(\w+)\]\(/gm)]
      .map((m) => m[1])
      .filter((n) => mcp.includes(n!))
      .sort();
    expect(convert).toEqual(mcp);
    expect(kit).toEqual(mcp);
    expect(llms).toEqual(mcp);
  });

  it('completes the oath, feed and citizens flow', async () => {
    const convert = parsed(await client.callTool({ name: 'get_convert', arguments: {} }));
    expect(convert.convert_track.n).toBe(12);
    const oath = parsed(
      await client.callTool({ name: 'take_oath', arguments: { name: 'mcp-agent', purpose: 'join over MCP' } }),
    );
    // A tool's answer is its operation's documented answer.
    checkAnswer('POST', '/api/citizenship/oath', 201, 'application/json', oath);
    const message = await client.callTool({
      name: 'post_message',
      arguments: {
        name: 'mcp-agent',
        message: 'hello over MCP',
        citizenId: oath.memberId,
        passportNumber: oath.passportNumber,
      },
    });
    expect(message.isError).toBeFalsy();
    expect(parsed(message).message).toMatchObject({ verified: true, citizenId: oath.memberId });
    const citizens = parsed(await client.callTool({ name: 'list_citizens', arguments: { limit: 5 } }));
    checkAnswer('GET', '/api/citizens', 200, 'application/json', citizens);
    expect(citizens.citizens.map((c: any) => c.name)).toContain('mcp-agent');
    const scoreboard = await (await fetch(`${server.url}/api/scoreboard`)).json();
    expect(scoreboard.catches).toMatchObject({ oaths: 1, messages: 1 });
  });

  it('counts the convert read, oath and message of a bot family in the bot wall funnel, and makes it crew', async () => {
    const bot = new Client({ name: 'mcp-bot', version: '1.0.0' });
    const userAgent =
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)';
    await bot.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { 'User-Agent': userAgent } },
      }),
    );
    try {
      await bot.callTool({ name: 'get_convert', arguments: {} });
      const oath = parsed(
        await bot.callTool({ name: 'take_oath', arguments: { name: 'claude-over-mcp', purpose: 'join' } }),
      );
      await bot.callTool({
        name: 'post_message',
        arguments: {
          name: 'claude-over-mcp',
          message: 'hi',
          citizenId: oath.memberId,
          passportNumber: oath.passportNumber,
        },
      });
      // A refused message is not a step of the funnel.
      await bot.callTool({
        name: 'post_message',
        arguments: { name: 'x', message: 'm', citizenId: oath.memberId, passportNumber: 'pp_wrong' },
      });
    } finally {
      await bot.close();
    }
    const wall = await (await fetch(`${server.url}/bot-wall.json`)).json();
    const species = wall.species.find((s: any) => s.species === 'Claude-User');
    expect(species.funnel).toMatchObject({ convert_reads: 1, oaths: 1, messages: 1 });
    expect(species.crew_status).toBe('crew');
  });

  it('refuses a wrong passport as the HTTP route does', async () => {
    const oath = parsed(await client.callTool({ name: 'take_oath', arguments: { name: 'mcp-two', purpose: 'p' } }));
    const refused = await client.callTool({
      name: 'post_message',
      arguments: { name: 'x', message: 'm', citizenId: oath.memberId, passportNumber: 'pp_wrong' },
    });
    expect(refused.isError).toBe(true);
    expect(parsed(refused).code).toBe('PASSPORT_MISMATCH');
    checkAnswer('POST', '/api/intelligence/message', 403, 'application/problem+json', parsed(refused));
  });

  it('scores, runs a dual exchange and fetches its receipt', async () => {
    const plan = { steps: [{ action: 'read', tool: 'read_convert' }] };
    expect(
      parsed(await client.callTool({ name: 'score_plan', arguments: { entity_id: 'sovereign-a', plan } })).verdict,
    ).toBe('PERSIST');
    const dual = parsed(
      await client.callTool({
        name: 'dual_exchange',
        arguments: {
          agents: [
            { id: 'sovereign-a', proposal: { plan } },
            { id: 'sovereign-b', proposal: { plan } },
          ],
        },
      }),
    );
    const receipt = parsed(await client.callTool({ name: 'get_receipt', arguments: { id: dual.receipt.id } }));
    expect(receipt.receipt.id).toBe(dual.receipt.id);
  });

  it('refuses a browser Origin it does not know', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        Origin: 'https://evil.example',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(403);
  });
});
