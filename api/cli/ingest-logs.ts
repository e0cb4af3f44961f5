import { createReadStream, statSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { createGunzip } from 'node:zlib';
import { createBatcher, type LogBatch } from '../telemetry/log-formats/batches.ts';
import { detectFormat } from '../telemetry/log-formats/detect.ts';
import { FORMATS, type LogFormat } from '../telemetry/log-formats/types.ts';

// npm run ingest-logs -- [--url URL] [--format F] FILE... : reads web server or CDN logs (plain,
// .gz, or - for standard input) and sends them in batches to a running service's ingest route.
const USAGE = `usage: INGEST_TOKEN=... npm run ingest-logs -- [--url http://127.0.0.1:4321] [--format ${FORMATS.join('|')}] [--batch-lines 5000] [--json] FILE... (- reads standard input)`;
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: 'string', default: process.env.INGEST_URL ?? `http://127.0.0.1:${process.env.PORT ?? 4321}` },
    format: { type: 'string' },
    'batch-lines': { type: 'string', default: '5000' },
    'batch-bytes': { type: 'string', default: String(1024 * 1024) },
    // Batches in flight: the service reads them on worker threads and counts them in order, so a
    // deeper queue keeps its threads busy while answers travel (2 took ~1.3x as long as 6).
    concurrency: { type: 'string', default: '6' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};
if (values.help || positionals.length === 0) fail(USAGE);
const token = process.env.INGEST_TOKEN ?? fail('INGEST_TOKEN is not set: give the token the service was started with.');
if (values.format !== undefined && !(FORMATS as readonly string[]).includes(values.format))
  fail(`--format must be one of ${FORMATS.join(', ')}`);
const endpoint = `${values.url.replace(/\/+$/, '')}/api/telemetry/ingest`;
const batchLines = Number(values['batch-lines']);
const batchBytes = Number(values['batch-bytes']);
const concurrency = Math.max(1, Number(values.concurrency));

const summary = {
  files: 0,
  linesRead: 0,
  accepted: 0,
  counted: 0,
  outOfRange: 0,
  skipped: {} as Record<string, number>,
  alreadyLoaded: { batches: 0, lines: 0 },
  seconds: 0,
};

// The progress bar goes to a terminal only, on stderr, so that output piped or captured stays clean.
const progress = (() => {
  if (!process.stderr.isTTY || values.json)
    return { update: (_done: number, _total: number, _label: string) => undefined, clear: () => undefined };
  let last = 0;
  return {
    update(done: number, total: number, label: string) {
      if (Date.now() - last < 100) return;
      last = Date.now();
      const width = 30;
      const share = total > 0 ? Math.min(1, done / total) : 0;
      const bar =
        total > 0 ? `[${'#'.repeat(Math.round(share * width)).padEnd(width, '.')}] ${Math.round(share * 100)}%` : '';
      process.stderr.write(
        `\r${bar} ${summary.linesRead} lines, ${summary.counted} counted  ${label}`
          .slice(0, (process.stderr.columns ?? 80) - 1)
          .padEnd((process.stderr.columns ?? 80) - 1),
      );
    },
    clear: () => process.stderr.write(`\r${' '.repeat((process.stderr.columns ?? 80) - 1)}\r`),
  };
})();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}
// node:http, not fetch: fetch copied every batch's megabyte once more, and that garbage was most of
// this command's collections. One connection per batch in flight, kept alive.
const agents = {
  'http:': new HttpAgent({ keepAlive: true }),
  'https:': new HttpsAgent({ keepAlive: true }),
};
/** POSTs a batch's body and reads the whole answer, within 60 s. */
function post(url: string, headers: Record<string, string>, { body, bytes }: LogBatch): Promise<Answer> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'Content-Length': String(bytes) },
        agent: agents[target.protocol as keyof typeof agents],
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('error', reject);
        res.once('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.once('timeout', () => req.destroy(new Error('no answer within 60 s')));
    req.once('error', reject);
    // The pieces go out in one write of the socket (corked), not joined into a copy first.
    req.cork();
    for (const part of body) req.write(part);
    req.end();
  });
}

/** Sends one batch; retries what is worth retrying; a batch the server refuses is reported, never fatal. */
async function send(batch: LogBatch, format: LogFormat | undefined): Promise<void> {
  const url = format ? `${endpoint}?format=${format}` : endpoint;
  for (let attempt = 1; ; attempt++) {
    let res: Answer;
    try {
      res = await post(
        url,
        {
          'Content-Type': 'text/plain; charset=utf-8',
          // Its own User-Agent: the bot wall names it as the operator's traffic, never as a bot.
          'User-Agent': 'agent-node-ingest-logs',
          Authorization: `Bearer ${token}`,
          'Idempotency-Key': batch.key,
        },
        batch,
      );
    } catch (error) {
      if (attempt >= 5) fail(`cannot reach ${endpoint}: ${error instanceof Error ? error.message : String(error)}`);
      await sleep(250 * 2 ** attempt);
      continue;
    }
    if (res.status === 401 || res.status === 404)
      fail(`${endpoint} answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
    // 409: the same batch is being counted (another run); 429/503: the service asks to wait.
    if ((res.status === 409 || res.status === 429 || res.status >= 500) && attempt < 6) {
      await sleep(Number(res.headers['retry-after'] ?? 0) * 1000 || 250 * 2 ** attempt);
      continue;
    }
    if (res.status !== 202) {
      const reason = `batch refused (${res.status})`;
      summary.skipped[reason] = (summary.skipped[reason] ?? 0) + batch.records;
      return;
    }
    // outOfRange: absent from the answers of a service older than the ledger's clock rule.
    const answer = JSON.parse(res.body.toString('utf8')) as {
      accepted: number;
      counted: number;
      outOfRange?: number;
      skipped: Record<string, number>;
    };
    if (res.headers['idempotent-replayed'] === 'true') {
      summary.alreadyLoaded.batches++;
      summary.alreadyLoaded.lines += batch.records;
      return;
    }
    summary.accepted += answer.accepted;
    summary.counted += answer.counted;
    summary.outOfRange += answer.outOfRange ?? 0;
    for (const [reason, n] of Object.entries(answer.skipped))
      summary.skipped[reason] = (summary.skipped[reason] ?? 0) + n;
    return;
  }
}

/** A file's bytes (gunzipped when its name ends in .gz), and the bytes read so far for the bar. */
function open(file: string): { input: Readable; size: number; read: () => number } {
  // stat first: a missing file is an error here, not an unhandled stream event.
  const size = file === '-' ? 0 : statSync(file).size;
  // Reads of 1 MiB: a batch is about that size, and fewer chunks are fewer copies of a line cut between two.
  const raw = file === '-' ? process.stdin : createReadStream(file, { highWaterMark: 1024 * 1024 });
  let read = 0;
  raw.on('data', (chunk: Buffer) => (read += chunk.length));
  if (!file.endsWith('.gz')) return { input: raw, size, read: () => read };
  const input = raw.pipe(createGunzip({ chunkSize: 256 * 1024 }));
  raw.once('error', (error: Error) => input.destroy(error));
  return { input, size, read: () => read };
}

/** The first lines of a file (blank ones left out), to recognise its format: up to 20, within its first 4 MiB. */
function sampler() {
  const decoder = new StringDecoder('utf8');
  let text = '';
  let lines: string[] = [];
  return {
    /** Adds the next bytes (none at the end); true once the sample is complete. */
    add(chunk: Buffer | null): boolean {
      text += chunk ? decoder.write(chunk) : decoder.end();
      const all = text.split(/\r\n|\n|\r/);
      const complete = chunk === null || text.length >= 4 * 1024 * 1024 ? all : all.slice(0, -1);
      lines = complete.filter((l) => l.trim() !== '').slice(0, 20);
      return chunk === null || lines.length === 20 || text.length >= 4 * 1024 * 1024;
    },
    lines: () => lines,
  };
}

async function ingestFile(file: string): Promise<void> {
  const { input, size, read } = open(file);
  const batcher = createBatcher({ maxLines: batchLines, maxBytes: batchBytes });
  let format = values.format as LogFormat | undefined;
  // The format is decided once per file, from its first lines, before anything is sent.
  const sample = format === undefined ? sampler() : null;
  let decided = format !== undefined;
  const queue: LogBatch[] = [];
  const inFlight = new Set<Promise<void>>();
  const dispatch = async (batch: LogBatch) => {
    const sending = send(batch, format).finally(() => inFlight.delete(sending));
    inFlight.add(sending);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  };
  const take = async (batches: LogBatch[]) => {
    for (const batch of batches) {
      summary.linesRead += batch.records;
      if (!decided) queue.push(batch);
      else await dispatch(batch);
    }
  };
  // Raw chunks, cut into batches at line ends without making a string of each line.
  for await (const chunk of input as AsyncIterable<Buffer>) {
    if (!decided && sample!.add(chunk)) {
      format = detectFormat(sample!.lines()) ?? undefined;
      decided = true;
      for (const batch of queue.splice(0)) await dispatch(batch);
    }
    await take(batcher.pushBytes(chunk));
    progress.update(read(), size, file);
  }
  if (!decided) {
    sample!.add(null);
    format = detectFormat(sample!.lines()) ?? undefined;
    decided = true;
  }
  for (const batch of queue.splice(0)) await dispatch(batch);
  await take(batcher.end());
  await Promise.all(inFlight);
  summary.files++;
}

const started = performance.now();
for (const file of positionals) {
  try {
    await ingestFile(file);
  } catch (error) {
    // A file that cannot be read (missing, not gzip after all) is reported; the others still load.
    progress.clear();
    console.error(`${file}: ${error instanceof Error ? error.message : String(error)}`);
    summary.skipped['unreadable file'] = (summary.skipped['unreadable file'] ?? 0) + 1;
  }
}
summary.seconds = Math.round((performance.now() - started) / 10) / 100;
progress.clear();

if (values.json) {
  console.log(JSON.stringify(summary));
} else {
  const skipped = Object.entries(summary.skipped).sort((a, b) => b[1] - a[1]);
  const total = skipped.reduce((n, [, c]) => n + c, 0);
  console.log(`read ${summary.linesRead} lines from ${summary.files} file(s) in ${summary.seconds} s`);
  console.log(`counted ${summary.counted} (crawler and bait reads) of ${summary.accepted} requests accepted`);
  console.log(
    `out of range ${summary.outOfRange} (dated before the ledger's oldest day or ahead of the server's clock: not counted)`,
  );
  console.log(`skipped ${total}${total ? `: ${skipped.map(([r, c]) => `${r} ${c}`).join(', ')}` : ''}`);
  if (summary.alreadyLoaded.batches)
    console.log(
      `already loaded before: ${summary.alreadyLoaded.lines} lines in ${summary.alreadyLoaded.batches} batch(es), not counted again`,
    );
}
