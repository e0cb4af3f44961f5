import type { AgentCard } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { buildAgentCard } from '../../api/documents/agent-card.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

describe('/.well-known/agent-card.json (A2A v1.0)', () => {
  it('has the shape of the official SDK type (checked by tsc)', async () => {
    // `satisfies` makes the type check fail the build if a required field is missing or mistyped.
    const card = buildAgentCard(await loadContent('content'), {
      site: 'http://x',
      canon: 'https://y',
    }) satisfies AgentCard;
    expect(card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual(['JSONRPC', 'JSONRPC']);
  });

  it('is served with ETag and Cache-Control, and its interfaces answer', async () => {
    const res = await fetch(`${server.url}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('etag')).toMatch(/^".+"$/);
    expect(res.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const card = (await res.json()) as AgentCard;
    expect(card.skills.length).toBeGreaterThanOrEqual(3);
    for (const s of card.skills) expect(s.tags.length * s.examples.length).toBeGreaterThan(0);
    const door = card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC')!;
    expect(new URL(door.url).pathname).toBe('/a2a');
    const reply = await fetch(`${server.url}/a2a`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"none"}}',
    });
    expect(reply.status).toBe(200);
    expect((await reply.json()).error.code).toEqual(expect.any(Number));
  });
});
