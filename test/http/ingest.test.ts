import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server.ts';

const TOKEN = 'test-ingest-token-0123456789abcdefghij';
let server: ServerProcess;
beforeAll(async () => {
  server = await startServer({ INGEST_TOKEN: TOKEN });
});
afterAll(async () => {
  await server.stop();
});

const ingest = (body: unknown, token: string | null = TOKEN) =>
  fetch(`${server.url}/api/telemetry/ingest`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });

describe('CDN log ingest', () => {
  it('counts crawler reads a CDN served, in batches, into the same ledger', async () => {
    const lines = [
      { method: 'GET', path: '/api/convert', host: 'cdn.example.org', userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)', status: 200, time: '2026-11-21T10:00:00.000Z' },
      { method: 'GET', path: '/llms.txt', host: 'cdn.example.org', userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)', status: 304 },
      { method: 'GET', path: '/', host: 'cdn.example.org', userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0', status: 200 },
    ];
    const res = await ingest({ lines });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: 3, counted: 2 });
    const traffic = await (await fetch(`${server.url}/bot-traffic.json`, { headers: { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' } })).json();
    const gpt = traffic.families.find((f: any) => f.family === 'GPTBot');
    expect(gpt).toMatchObject({ requests: 2, statusCounts: { '2xx': 1, '3xx': 1 }, firstSeen: '2026-11-21T10:00:00.000Z' });
  });

  it('refuses a missing or wrong token with 401, and a bad batch with 4xx', async () => {
    const line = { method: 'GET', path: '/', status: 200 };
    expect((await ingest({ lines: [line] }, null)).status).toBe(401);
    expect((await ingest({ lines: [line] }, `${TOKEN}x`)).status).toBe(401);
    expect((await ingest({ lines: [] })).status).toBe(422);
    expect((await ingest({ lines: [{ ...line, status: 999 }] })).status).toBe(422);
    expect((await ingest({ lines: [{ ...line, path: 'no-slash' }] })).status).toBe(422);
  });

  it('is off (404) on a server without INGEST_TOKEN', async () => {
    const plain = await startServer();
    const res = await fetch(`${plain.url}/api/telemetry/ingest`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"lines":[]}' });
    expect(res.status).toBe(404);
    await plain.stop();
  });
});
