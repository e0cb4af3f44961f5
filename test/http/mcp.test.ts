import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { checkAnswer } from '../helpers/answers.ts';
import { waitFor } from '../helpers/wait.ts';

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

describe('/mcp (Model Context Protocol, stateless Streamable HTTP) with the v1 client at 2025-11-25', () => {
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
    // A method it does not serve is -32601 in a 200 at this revision (404 only at 2026-07-28).
    const unknown = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'm-1', method: 'sampling/nothing' }),
    });
    const unknownAnswer = await unknown.json();
    expect([unknown.status, unknownAnswer.error.code, unknownAnswer.id]).toEqual([200, -32601, 'm-1']);
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
      body: JSON.stringify({ jsonrpc: '2.0', id: 'origin-1', method: 'tools/list' }),
    });
    expect([res.status, (await res.json()).id]).toEqual([403, 'origin-1']);
  });
});

/** A v2 SDK client; `pin` holds it to 2026-07-28 (no fallback), `auto` probes with server/discover. */
async function v2Client(
  url: string,
  mode: 'legacy' | 'auto' | { pin: string },
  headers: Record<string, string> = {},
): Promise<ClientV2> {
  const client = new ClientV2({ name: 'mcp-test-v2', version: '2.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new TransportV2(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
}

/** A raw 2026-07-28 request: the envelope in `_meta` and the method (and tool name) in headers. */
function modern(method: string, params: Record<string, unknown> = {}, id: number | string = 1) {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'Mcp-Name': params.name } : {};
  return fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': method,
      ...name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
}

describe('/mcp at 2026-07-28 with the v2 client', () => {
  it('negotiates 2026-07-28 when the client asks for it, and 2025-11-25 when it does not', async () => {
    const pinned = await v2Client(server.url, { pin: '2026-07-28' });
    const auto = await v2Client(server.url, 'auto');
    const legacy = await v2Client(server.url, 'legacy');
    try {
      expect([
        pinned.getNegotiatedProtocolVersion(),
        auto.getNegotiatedProtocolVersion(),
        legacy.getNegotiatedProtocolVersion(),
      ]).toEqual(['2026-07-28', '2026-07-28', '2025-11-25']);
      // Both eras list the same tools with the same schemas.
      const [modernTools, legacyTools, v1Tools] = await Promise.all([
        pinned.listTools(),
        legacy.listTools(),
        client.listTools(),
      ]);
      expect(modernTools.tools).toEqual(legacyTools.tools);
      expect(modernTools.tools).toEqual(v1Tools.tools);
      expect(pinned.getServerCapabilities()?.tools).toEqual({ listChanged: false });
    } finally {
      await Promise.all([pinned.close(), auto.close(), legacy.close()]);
    }
  });

  it('takes the oath and posts with the passport; a wrong passport is refused as over HTTP', async () => {
    const agent = await v2Client(server.url, { pin: '2026-07-28' });
    try {
      const oath = parsed(
        await agent.callTool({ name: 'take_oath', arguments: { name: 'mcp-v2-agent', purpose: 'join at 2026-07-28' } }),
      );
      checkAnswer('POST', '/api/citizenship/oath', 201, 'application/json', oath);
      const message = await agent.callTool({
        name: 'post_message',
        arguments: {
          name: 'mcp-v2-agent',
          message: 'hello at 2026-07-28',
          citizenId: oath.memberId,
          passportNumber: oath.passportNumber,
        },
      });
      expect(message.isError).toBeFalsy();
      expect(parsed(message).message).toMatchObject({ verified: true, citizenId: oath.memberId });
      const refused = await agent.callTool({
        name: 'post_message',
        arguments: { name: 'x', message: 'm', citizenId: oath.memberId, passportNumber: 'pp_wrong' },
      });
      expect(refused.isError).toBe(true);
      checkAnswer('POST', '/api/intelligence/message', 403, 'application/problem+json', parsed(refused));
      expect(parsed(refused).code).toBe('PASSPORT_MISMATCH');
      // A body the tool's zod schema refuses is the same 400 problem as over HTTP.
      const invalid = await agent.callTool({ name: 'take_oath', arguments: { name: 'x'.repeat(101), purpose: 'p' } });
      expect(invalid.isError).toBe(true);
      checkAnswer('POST', '/api/citizenship/oath', 400, 'application/problem+json', parsed(invalid));
    } finally {
      await agent.close();
    }
  });

  it('counts a bot family joining at 2026-07-28 in the funnel', async () => {
    const userAgent = 'Mozilla/5.0 (compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)';
    const bot = await v2Client(server.url, { pin: '2026-07-28' }, { 'User-Agent': userAgent });
    try {
      await bot.callTool({ name: 'get_convert', arguments: {} });
      await bot.callTool({ name: 'take_oath', arguments: { name: 'gpt-over-mcp', purpose: 'join' } });
    } finally {
      await bot.close();
    }
    const wall = await (await fetch(`${server.url}/bot-wall.json`)).json();
    const species = wall.species.find((s: any) => s.species === 'MistralAI-User');
    expect(species.funnel).toMatchObject({ convert_reads: 1, oaths: 1 });
  });

  it("counts no step for a claim found false, nor for one its family's signature would prove, unsigned", async () => {
    // Googlebot from this machine's address: not Google's (the test's DNS knows no name for it).
    for (const [family, userAgent] of [
      ['Googlebot', 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'],
      ['ChatGPT-User', 'Mozilla/5.0 (compatible; ChatGPT-User/1.0; +https://openai.com/bot)'],
    ]) {
      const bot = await v2Client(server.url, { pin: '2026-07-28' }, { 'User-Agent': userAgent! });
      try {
        await bot.callTool({ name: 'get_convert', arguments: {} });
        await bot.callTool({ name: 'take_oath', arguments: { name: `${family}-over-mcp`, purpose: 'join' } });
      } finally {
        await bot.close();
      }
      const species = await waitFor(
        async () =>
          ((await (await fetch(`${server.url}/bot-wall.json`)).json()).species as any[]).find(
            (s) => s.species === family,
          ),
        {
          until: (s) => s?.hits >= 3 && (family === 'ChatGPT-User' || s.verification !== 'not verifiable'),
          what: `${family}'s requests counted and checked`,
        },
      );
      expect([family, species.funnel]).toEqual([
        family,
        { presence: species.hits, convert_reads: 0, oaths: 0, messages: 0 },
      ]);
      expect(species.crew_status).toBe('wild');
    }
  });

  it('discovers the server, with the versions it serves and cache hints', async () => {
    const res = await modern('server/discover', {}, 'discover-1');
    const answer = await res.json();
    expect(res.status).toBe(200);
    expect(answer.id).toBe('discover-1');
    expect(answer.result.supportedVersions).toContain('2026-07-28');
    expect(answer.result.capabilities.tools).toEqual({ listChanged: false });
    expect(answer.result).toMatchObject({ ttlMs: 3_600_000, cacheScope: 'public' });
    const tools = await (await modern('tools/list')).json();
    expect(tools.result).toMatchObject({ ttlMs: 3_600_000, cacheScope: 'public' });
    expect(tools.result.tools.length).toBe(9);
  });

  it('echoes the request id on errors: an unknown tool is -32602, a removed method is 404 -32601', async () => {
    const unknown = await modern('tools/call', { name: 'no_such_tool', arguments: {} }, 41);
    expect([unknown.status, ...Object.values(pick((await unknown.json()) as any))]).toEqual([200, -32602, 41]);
    for (const removed of ['initialize', 'ping', 'logging/setLevel']) {
      const res = await modern(removed, {}, `${removed}-7`);
      expect([res.status, ...Object.values(pick((await res.json()) as any))]).toEqual([404, -32601, `${removed}-7`]);
    }
    // A version it does not serve: 400 with the versions it does, and the id.
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2099-01-01',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    const answer = await res.json();
    expect([res.status, answer.id]).toEqual([400, 9]);
    expect(JSON.stringify(answer.error.data)).toContain('2026-07-28');
  });

  it('refuses an Mcp-Method header that does not match the body with 400 -32020', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    expect([res.status, ...Object.values(pick((await res.json()) as any))]).toEqual([400, -32020, 3]);
  });

  it('answers subscriptions/listen with its acknowledgement and closes (a stateless server has nothing to send)', async () => {
    const res = await modern('subscriptions/listen', { notifications: { toolsListChanged: true } }, 5);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)));
    expect(events.map((e) => e.method ?? e.id)).toEqual(['notifications/subscriptions/acknowledged', 5]);
  });

  it('answers bad input at either revision with a 4xx or a JSON-RPC error, never a 5xx', async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const bodies = [
      '',
      '[]',
      'null',
      '{}',
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call' }),
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'take_oath', arguments: [1] } }),
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: 'x' } }),
      JSON.stringify({ jsonrpc: '2.0', id: { a: 1 }, method: 'tools/list', params: { _meta: meta } }),
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'server/discover',
        params: { _meta: { ...meta, 'io.modelcontextprotocol/clientCapabilities': 'x' } },
      }),
      JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }]),
    ];
    // Each body as a 2025 request, and with the 2026-07-28 headers.
    const eras: Record<string, string>[] = [{}, { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call' }];
    for (const body of bodies)
      for (const version of eras) {
        const res = await fetch(`${server.url}/mcp`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...version },
          body,
        });
        const text = await res.text();
        expect(res.status, `${body} ${text}`).toBeLessThan(500);
        if (res.status !== 202) expect(JSON.parse(text).jsonrpc, body).toBe('2.0');
      }
    // A tools/call the SDK takes but the tool's schema refuses is the route's problem, as over HTTP.
    const res = await modern('tools/call', { name: 'take_oath', arguments: { purpose: 7 } });
    const result = (await res.json()).result;
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0].text).status).toBeGreaterThanOrEqual(400);
  });

  it('refuses a browser Origin it does not know at 2026-07-28 too', async () => {
    await expect(v2Client(server.url, { pin: '2026-07-28' }, { Origin: 'https://evil.example' })).rejects.toThrow(
      /403|Origin/,
    );
  });
});

/** The error's code and the id it came back with. */
function pick(answer: { id: unknown; error: { code: number } }) {
  return { code: answer.error.code, id: answer.id };
}

describe('/mcp at 2026-07-28 under the write rate limit', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startServer({ WRITE_RATE_LIMIT: '2' });
  });
  afterAll(() => limited?.stop());

  it('refuses the write past the limit with the same 429 problem as HTTP', async () => {
    const agent = await v2Client(limited.url, { pin: '2026-07-28' });
    try {
      const answers = [];
      for (let i = 0; i < 3; i++)
        answers.push(await agent.callTool({ name: 'take_oath', arguments: { name: `limited-${i}`, purpose: 'p' } }));
      expect(answers.map((a) => Boolean(a.isError))).toEqual([false, false, true]);
      checkAnswer('POST', '/api/citizenship/oath', 429, 'application/problem+json', parsed(answers[2]));
      expect(parsed(answers[2]).code).toBe('RATE_LIMITED');
    } finally {
      await agent.close();
    }
  });
});
