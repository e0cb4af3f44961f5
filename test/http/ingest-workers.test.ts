import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultIngestWorkers, loadConfig } from '../../api/config.ts';
import { loadContent } from '../../api/content/load.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, startServerProcess, type ServerProcess, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// The ingest route reads batches on worker threads (INGEST_WORKERS), which also set aside the lines
// that count nothing; what the wall shows must be what the single-threaded path makes of the same log.
const TOKEN = 'test-ingest-token-0123456789abcdefghij';
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const corpus = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));

const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
// Names the bot table does not know: their rows are earned by distinct clients, in order.
const INVENTED = [
  'FooCrawlerZ/3.1 (+https://foo.example/bot)',
  'BarSpiderQ/0.9 (+https://bar.example/)',
  'QuuxFetchBot/2.0',
];
const OPERATOR = ['agent-node-ingest-logs', 'kube-probe/1.29'];
// Another host's robots.txt (ROBOTS_TXT_DIR): lines logged with its vhost are judged by it.
const SHOP_ROBOTS = 'User-agent: GPTBot\nDisallow: /checkout\n\nUser-agent: *\nDisallow: /cart\nAllow: /\n';

/**
 * A combined log as a site's reads: people (some sent by AI products, by Referer or utm_source),
 * bots, probes, bait, robots.txt fetches and broken rules on another host, names the table does not
 * know from several addresses, Googlebot from its ranges and from elsewhere, old lines, lines of
 * the last hour, and lines dated ahead of the clock.
 */
/**
 * A log of `lines` lines. `oneAddressPastItsShare`: one address sends a third of the visits "from
 * ChatGPT", past its share an hour (each process tallies shares of its own, so a log split between
 * processes is given without it).
 */
async function log(lines: number, { oneAddressPastItsShare = true } = {}): Promise<string[]> {
  const bait = (await loadContent('content')).crawlPolicy.disallow[0]!;
  const people = corpus('test/fixtures/user-agents/people.txt');
  const bots = [
    GOOGLEBOT,
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
    ...OPERATOR,
    'Whibse',
    ...INVENTED,
    ...corpus('test/fixtures/user-agents/bots.txt'),
  ];
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(xs.length * random() ** 2)]!;
  const start = Date.now() - 2 * 86_400_000;
  const p = (n: number) => String(n).padStart(2, '0');
  const clf = (ms: number) => {
    const d = new Date(ms);
    return `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
  };
  return Array.from({ length: lines }, (_, i) => {
    const bot = random() < 0.4;
    const ua = bot ? pick(bots) : pick(people);
    // One line in fifty is older than the ledger keeps, one in a hundred ahead of the clock (out of
    // range), one in a hundred just ahead (counted as now), three in a hundred of the last hour.
    const t = random();
    const time = clf(
      t < 0.02
        ? start - 40 * 86_400_000
        : t < 0.03
          ? Date.now() + 3_600_000
          : t < 0.04
            ? Date.now() + 60_000
            : t < 0.07
              ? Date.now() - Math.floor(random() * 3_600_000)
              : start + i * 1_500,
    );
    const shop = random() < 0.2;
    const r = random();
    const path = shop
      ? pick(['/', '/checkout/pay', '/cart', '/robots.txt', '/products/1'])
      : r < 0.05
        ? '/robots.txt'
        : r < 0.08
          ? bait
          : r < 0.12
            ? '/wp-login.php'
            : pick(['/', '/llms.txt', '/bot-wall', '/?utm_source=chatgpt.com', '/docs/api']);
    const referer = bot
      ? '-'
      : pick(['-', 'https://chatgpt.com/', 'https://www.perplexity.ai/', 'https://www.google.com/']);
    // The operator's probes and CLIs from its own network and, half the time, a client posing as them;
    // and one address that sends a third of the visits "from ChatGPT" (its share an hour is capped).
    const address =
      referer === 'https://chatgpt.com/' && random() < 0.3
        ? oneAddressPastItsShare
          ? '192.0.2.77'
          : `192.0.2.${Math.floor(random() * 250)}`
        : ua === GOOGLEBOT && random() < 0.5
          ? `66.249.66.${Math.floor(random() * 250)}`
          : OPERATOR.includes(ua) && random() < 0.5
            ? `10.0.0.${Math.floor(random() * 250)}`
            : INVENTED.includes(ua)
              ? `198.51.100.${1 + Math.floor(random() * 6)}`
              : `203.0.113.${Math.floor(random() * 250)}`;
    const status = path === '/wp-login.php' ? 404 : random() < 0.1 ? 304 : 200;
    return `${shop ? 'shop.example:443 ' : ''}${address} - - [${time}] "GET ${path} HTTP/1.1" ${status} 512 "${referer}" "${ua.replace(/["\\]/g, '')}"`;
  });
}

let single: TestServer;
let workers: TestServer;
beforeAll(async () => {
  const robots = mkdtempSync(join(tmpdir(), 'ingest-robots-'));
  writeFileSync(join(robots, 'shop.example.txt'), SHOP_ROBOTS);
  [single, workers] = await Promise.all([
    startServer({ INGEST_TOKEN: TOKEN, INGEST_WORKERS: '0', ROBOTS_TXT_DIR: robots, WRITE_RATE_LIMIT: '0' }),
    startServer({ INGEST_TOKEN: TOKEN, INGEST_WORKERS: '2', ROBOTS_TXT_DIR: robots, WRITE_RATE_LIMIT: '0' }),
  ]);
});
afterAll(async () => {
  await Promise.all([single?.stop(), workers?.stop()]);
});

const post = (server: TestServer, body: string, type = 'text/plain') =>
  fetch(`${server.url}/api/telemetry/ingest`, {
    method: 'POST',
    headers: { 'Content-Type': type, Authorization: `Bearer ${TOKEN}` },
    body,
  });
/**
 * The wall's figures, with times of the last minutes (when each server started, answered, or counted
 * the test's own requests, made with a library's User-Agent) blanked: every logged line is older.
 */
const wall = async (server: TestServer) => {
  const recent = Date.now() - 10 * 60_000;
  const read = async (path: string) =>
    JSON.parse(
      (await (await fetch(`${server.url}${path}`, { headers: { 'User-Agent': BROWSER } })).text()).replace(
        /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g,
        (iso) => (Date.parse(iso) >= recent ? '(now)' : iso),
      ),
    ) as Record<string, unknown>;
  return { traffic: await read('/bot-traffic.json'), wall: await read('/bot-wall.json') };
};

describe('log ingest on worker threads', () => {
  it('answers each batch and leaves the wall exactly as the single-threaded path does', async () => {
    const lines = await log(12_000);
    const batches = [
      lines.slice(0, 2_500),
      lines.slice(2_500, 5_000),
      lines.slice(5_000, 10_000),
      lines.slice(10_000),
    ].map((b) => `${b.join('\n')}\n`);
    for (const body of batches) {
      const [a, b] = await Promise.all([post(single, body), post(workers, body)]);
      expect(a.status).toBe(202);
      expect(b.status).toBe(202);
      expect(await b.json()).toEqual(await a.json());
    }
    // JSON lines too, some without a time (counted at the server's clock).
    const json = JSON.stringify({
      lines: Array.from({ length: 400 }, (_, i) => ({
        method: 'GET',
        path: i % 3 ? '/llms.txt' : '/robots.txt',
        host: 'cdn.example',
        userAgent: i % 2 ? GOOGLEBOT : INVENTED[i % 3]!,
        status: 200,
        ...(i % 4 ? { time: new Date(Date.now() - 5 * 3_600_000 - i * 1000).toISOString() } : {}),
        clientAddress: `198.51.100.${i % 9}`,
      })),
    });
    const [ja, jb] = await Promise.all([
      post(single, json, 'application/json'),
      post(workers, json, 'application/json'),
    ]);
    expect([ja.status, jb.status]).toEqual([202, 202]);
    expect(await jb.json()).toEqual(await ja.json());
    // Reverse-DNS answers settle claims after the batch's answer: wait for both walls to settle alike.
    const [a, b] = await waitFor(async () => [await wall(single), await wall(workers)] as const, {
      until: ([x, y]) => JSON.stringify(x) === JSON.stringify(y),
      what: 'the two walls to agree',
    }).catch(async () => [await wall(single), await wall(workers)] as const);
    expect(b).toEqual(a);
    const traffic = a.traffic as { observedRequests: number; unknownClientRequests: number; families: unknown[] };
    // The log exercised what the workers set aside, group and leave one by one: bots, unknown
    // clients, referrals, broken rules of another host's robots.txt, invented names, verification.
    expect(traffic.observedRequests).toBeGreaterThan(2_000);
    expect(traffic.unknownClientRequests).toBeGreaterThan(0);
    const wallText = JSON.stringify(a.wall);
    expect(wallText).toMatch(/chatgpt|OpenAI/i);
    expect(wallText).toContain('shop.example');
    expect(wallText).toMatch(/Disallow: \/(checkout|cart)/);
    expect(wallText).toMatch(/FooCrawlerZ|BarSpiderQ|QuuxFetchBot/);
    expect(JSON.stringify(a.traffic)).toMatch(/"verified":[1-9]/);
  });

  it('counts the lines of a batch on its bytes, as the single-threaded path counted them after decoding', async () => {
    // 10,000 lines with a last one unterminated, then one more: the limit is the same both ways.
    for (const [body, status] of [
      [`${'x\n'.repeat(9_999)}x`, 202],
      [`${'x\r\n'.repeat(10_000)}x`, 413],
      ['', 422],
    ] as const) {
      const [a, b] = await Promise.all([post(single, body), post(workers, body)]);
      expect([a.status, b.status]).toEqual([status, status]);
      expect(await b.json()).toEqual(await a.json());
    }
  });

  it('starts its worker threads with the service when ingest is on, before any batch', async () => {
    // Each worker is a thread of the process: two more than the same server reading batches itself.
    const threads = (server: ServerProcess) => readdirSync(`/proc/${server.child.pid}/task`).length;
    const [pool, inline] = await Promise.all([
      startServerProcess({ INGEST_TOKEN: TOKEN, INGEST_WORKERS: '2' }),
      startServerProcess({ INGEST_TOKEN: TOKEN, INGEST_WORKERS: '0' }),
    ]);
    try {
      await waitFor(() => threads(pool) - threads(inline), { until: (more) => more >= 2, what: 'two more threads' });
    } finally {
      await Promise.all([pool.stop(), inline.stop()]);
    }
  });

  it('takes INGEST_WORKERS from 0 to 16, an empty value as the default, and refuses more at startup', () => {
    const workers = (v: string | undefined) => loadConfig({ ...process.env, INGEST_WORKERS: v }).INGEST_WORKERS;
    expect(workers(undefined)).toBe(defaultIngestWorkers(availableParallelism()));
    expect(workers('')).toBe(workers(undefined));
    // One fewer than the cores, from one to two: the counting thread keeps a core of its own where there are two.
    expect([1, 2, 3, 4, 16].map(defaultIngestWorkers)).toEqual([1, 1, 2, 2, 2]);
    expect(workers('0')).toBe(0);
    expect(workers('16')).toBe(16);
    expect(() => workers('17')).toThrow(/INGEST_WORKERS/);
  });
});

const pgAvailable = await postgresAvailable();
describe.runIf(pgAvailable)(
  'log ingest on worker threads, on PostgreSQL: two processes, their ledgers added up',
  () => {
    let a: ServerProcess;
    let b: ServerProcess;
    let alone: TestServer;
    beforeAll(async () => {
      const robots = mkdtempSync(join(tmpdir(), 'ingest-robots-'));
      writeFileSync(join(robots, 'shop.example.txt'), SHOP_ROBOTS);
      const env = { INGEST_TOKEN: TOKEN, ROBOTS_TXT_DIR: robots, WRITE_RATE_LIMIT: '0' };
      const DATABASE_URL = await freshDatabase();
      const shared = { ...env, DATABASE_URL, INGEST_WORKERS: '2', TELEMETRY_FLUSH_MS: '100' };
      [a, b, alone] = await Promise.all([
        startServerProcess(shared),
        startServerProcess(shared),
        startServer({ ...env, INGEST_WORKERS: '0' }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop(), alone?.stop()]);
      await dropDatabases();
    });

    it("counts each batch once across both, and their merged wall shows the single-threaded path's counts", async () => {
      // Each process caps an address's referred visits with a tally of its own (docs/decisions.md,
      // "Referrals are people"): no address here sends more than its share.
      const lines = await log(8_000, { oneAddressPastItsShare: false });
      const batches = [0, 1, 2, 3].map((k) => `${lines.slice(k * 2_000, (k + 1) * 2_000).join('\n')}\n`);
      const send = (s: { url: string }, body: string, key: string) =>
        fetch(`${s.url}/api/telemetry/ingest`, {
          method: 'POST',
          // The CLI's User-Agent: the operator's own traffic, never counted (the replay goes to one process only).
          headers: {
            'Content-Type': 'text/plain',
            'User-Agent': 'agent-node-ingest-logs',
            Authorization: `Bearer ${TOKEN}`,
            'Idempotency-Key': key,
          },
          body,
        });
      const keys = batches.map((_, k) => `log-pg-test-batch-${k}-0123456789abcdef`);
      const answers = [];
      for (const [k, body] of batches.entries()) {
        const [mine, single] = await Promise.all([send(k < 2 ? a : b, body, keys[k]!), send(alone, body, keys[k]!)]);
        expect([mine.status, single.status]).toEqual([202, 202]);
        const answer = await mine.json();
        expect(answer).toEqual(await single.json());
        answers.push(answer);
      }
      // The first batch again, to the other process: its answer replayed from the shared store, nothing counted.
      const again = await send(b, batches[0]!, keys[0]!);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(answers[0]);

      type Traffic = {
        observedRequests: number;
        unknownClientRequests: number;
        families: { family: string; requests: number; statusCounts: Record<string, number> }[];
      };
      const traffic = async (s: { url: string }) =>
        (await (await fetch(`${s.url}/bot-traffic.json`, { headers: { 'User-Agent': BROWSER } })).json()) as Traffic;
      const want = await traffic(alone);
      expect(want.observedRequests).toBeGreaterThan(1_000);
      // Each process shows the other's counts once the other has saved its ledger (every 100 ms here).
      for (const s of [a, b]) {
        const got = await waitFor(() => traffic(s), {
          until: (t) => t.observedRequests === want.observedRequests,
          what: `${s.url} showing ${want.observedRequests} bot requests`,
        });
        expect(got.unknownClientRequests).toBe(want.unknownClientRequests);
        for (const name of ['Googlebot', 'GPTBot']) {
          const row = (t: Traffic) => t.families.find((f) => f.family === name);
          expect(row(got)?.requests, name).toBe(row(want)?.requests);
          expect(row(got)?.statusCounts, name).toEqual(row(want)?.statusCounts);
        }
      }
    });
  },
);
