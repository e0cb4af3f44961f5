import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// Bots that name themselves after Object.prototype's properties, and Host headers that do: the
// ledger keys its maps by such client-sent strings, so `__proto__` once wrote counts onto
// Object.prototype (every page reading an object broke until a restart) and `constructor` read a
// function where a count should be. The server runs in this process: a polluted prototype shows here.
const NAMES = Object.getOwnPropertyNames(Object.prototype);
const TOKEN = 'ingest-token-for-prototype-names-0123456789';
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36';
const botNamed = (name: string) => `Mozilla/5.0 (compatible; ${name}; +http://bots.example/${name})`;

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ DATA_DIR: ':memory:', INGEST_TOKEN: TOKEN, TRUST_PROXY: 'loopback' });
});
afterAll(async () => {
  await server.stop();
});

/** A GET with the given Host and User-Agent, from a client address of its own (fetch cannot set a Host). */
function get(path: string, host: string, userAgent: string, client: string): Promise<number> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname, port, path, headers: { Host: host, 'User-Agent': userAgent, 'X-Forwarded-For': client } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const read = async (path: string) => {
  const res = await fetch(server.url + path, { headers: { 'User-Agent': CHROME } });
  return { status: res.status, text: await res.text() };
};

interface Traffic {
  observedRequests: number;
  families: { family: string; requests: number }[];
}

describe("client-sent names that are Object.prototype's", () => {
  it('are counted as names, live and ingested, and every reader of the ledger still answers', async () => {
    for (const [i, name] of NAMES.entries())
      expect(await get('/', name, botNamed(name), `198.51.100.${i + 1}`)).toBe(200);
    const time = new Date().toISOString();
    const lines = NAMES.map((name, i) =>
      JSON.stringify({
        time,
        clientAddress: `203.0.113.${i + 1}`,
        host: name,
        method: 'GET',
        path: `/q${i}`,
        status: 200,
        userAgent: botNamed(name),
      }),
    );
    const ingest = await fetch(`${server.url}/api/telemetry/ingest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-ndjson', Authorization: `Bearer ${TOKEN}` },
      body: `${lines.join('\n')}\n`,
    });
    expect(ingest.status, await ingest.text()).toBe(202);

    // Nothing was written onto the prototype every object reads.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual([...NAMES].sort());
    expect(({} as Record<string, unknown>).requests).toBeUndefined();

    const traffic = await waitFor(async () => JSON.parse((await read('/bot-traffic.json')).text) as Traffic, {
      until: (t) => t.observedRequests >= 2 * NAMES.length,
      what: 'both rounds counted',
    });
    // Every request is in a row, each a count: the rows add up to the meter.
    expect(traffic.families.reduce((n, f) => n + f.requests, 0)).toBe(traffic.observedRequests);
    const wall = JSON.parse((await read('/bot-wall.json')).text) as {
      species: { species: string; domains: Record<string, unknown> }[];
    };
    for (const f of wall.species)
      for (const n of Object.values(f.domains)) expect(typeof n, `${f.species}'s domains`).toBe('number');
    // The names as keys: `constructor` is kept as `'constructor`, a name of its own.
    expect(traffic.families.map((f) => f.family)).toContain("'constructor");
    for (const path of ['/bot-wall', '/bot-wall.csv?range=24h', '/bot-wall?range=constructor'])
      expect((await read(path)).status, path).toBe(200);
    const mcp = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(mcp.status).toBe(200);
  });
});
