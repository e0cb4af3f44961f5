import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { createBatcher, MAX_LINE_BYTES, type LogBatch } from '../../../api/telemetry/log-formats/batches.ts';
import { MAX_RECORD_CHARS, parseBatch } from '../../../api/telemetry/log-formats/parse.ts';
import { splitLines } from '../../../api/telemetry/log-formats/parse-pool.ts';
import { tempFolders } from '../../helpers/temp.ts';

function batchesOf(lines: string[], maxLines = 2, maxBytes = 1024 * 1024): LogBatch[] {
  const batcher = createBatcher({ maxLines, maxBytes });
  return [...lines.flatMap((l) => batcher.push(l)), ...batcher.end()];
}
const text = (b: LogBatch) => {
  expect(b.bytes).toBe(b.body.reduce((n, part) => n + part.byteLength, 0));
  return Buffer.concat(b.body).toString('utf8');
};

/** The batches of a file as the CLI cut them before it read bytes: readline's lines, pushed one by one. */
async function byReadline(file: Buffer, maxLines: number, maxBytes: number): Promise<LogBatch[]> {
  const batcher = createBatcher({ maxLines, maxBytes });
  const out: LogBatch[] = [];
  for await (const line of createInterface({ input: Readable.from([file]), crlfDelay: Infinity }))
    out.push(...batcher.push(line));
  return [...out, ...batcher.end()];
}
/** The same file given as raw chunks cut at `cuts`. */
function byBytes(file: Buffer, cuts: number[], maxLines: number, maxBytes: number): LogBatch[] {
  const batcher = createBatcher({ maxLines, maxBytes });
  const out: LogBatch[] = [];
  let from = 0;
  for (const at of [...cuts, file.length]) {
    if (at > from) out.push(...batcher.pushBytes(file.subarray(from, at)));
    from = Math.max(from, at);
  }
  return [...out, ...batcher.end()];
}

describe('log batches', () => {
  it('cuts at fixed record counts, repeats the W3C directives in front of each batch, and keys by place and bytes', () => {
    const lines = ['#Version: 1.0', '#Fields: cs-method cs-uri-stem', 'GET\t/a', '', 'GET\t/b', 'GET\t/c'];
    const batches = batchesOf(lines);
    expect(batches.map((b) => [b.firstLine, b.records, text(b)])).toEqual([
      [3, 2, '#Version: 1.0\n#Fields: cs-method cs-uri-stem\nGET\t/a\nGET\t/b\n'],
      [6, 1, '#Version: 1.0\n#Fields: cs-method cs-uri-stem\nGET\t/c\n'],
    ]);
    // The same content gives the same keys (a file loaded twice); the same bytes elsewhere do not.
    expect(batchesOf(lines).map((b) => b.key)).toEqual(batches.map((b) => b.key));
    expect(batchesOf(['x', ...lines]).map((b) => b.key)).not.toContain(batches[1]!.key);
    expect(new Set(batches.map((b) => b.key)).size).toBe(2);
  });

  it('ends a batch before a new #Fields: line, and by size before it grows past the limit', () => {
    const batches = batchesOf(['#Fields: a', '1', '#Fields: b', '2'], 10);
    expect(batches.map(text)).toEqual(['#Fields: a\n1\n', '#Fields: b\n2\n']);
    const bySize = batchesOf(['aaaa', 'bbbb', 'cccc'], 10, 10);
    expect(bySize.map((b) => b.records)).toEqual([2, 1]);
  });

  it('cuts raw bytes into the very batches readline and push made, wherever the reads end', async () => {
    // Plain lines and every line the byte path must hand to readline's rules: CRLF, lone CRs,
    // blanks and spaces, directives, a line longer than a record, invalid UTF-8, a BOM, no last line end.
    let seed = 3;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const odd = [
      '\r\n',
      '\r',
      '\n',
      '   \n',
      '\t x\n',
      '#Version: 1.0\n',
      '#Fields: date time cs-uri-stem\n',
      '# a comment\n',
      `${'y'.repeat(16 * 1024 + 40)}\n`,
      `${'é'.repeat(9000)}\n`,
      '\ufeffbom line\n',
      'naïve – “quoted” 🦀\n',
      'a lone\rcarriage return\n',
      'two\r\r\n',
      // Past MAX_LINE_BYTES: a record too long to read, whatever it begins with.
      `${'z'.repeat(MAX_LINE_BYTES + 1)}\n`,
      `${'é'.repeat(MAX_LINE_BYTES / 2 + 1)}\r\n`,
      `${'€'.repeat(MAX_LINE_BYTES / 2)}\n`,
      `#Fields: ${'f '.repeat(MAX_LINE_BYTES)}\n`,
      `${' '.repeat(MAX_LINE_BYTES * 2)}\r`,
    ];
    const pieces: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      const r = random();
      if (r < 0.1) pieces.push(Buffer.from(odd[Math.floor(random() * odd.length)]!));
      else if (r < 0.12) pieces.push(Buffer.from([0x61, 0xff, 0xe2, 0x82, 0x0a, 0xc3]));
      else pieces.push(Buffer.from(`203.0.113.${i % 250} - - [x] "GET /p/${i} HTTP/1.1" 200 5 "-" "UA ${i % 7}"\n`));
    }
    pieces.push(Buffer.from('last line without an end\r'));
    const file = Buffer.concat(pieces);
    const plain = Buffer.from(pieces.filter((p) => p[0] === 0x32).join(''));
    for (const [maxLines, maxBytes] of [
      [5000, 1024 * 1024],
      [7, 1024 * 1024],
      [100, 4000],
    ] as const) {
      const want = (await byReadline(file, maxLines, maxBytes)).map((b) => [b.firstLine, b.records, text(b), b.key]);
      expect(want.length).toBeGreaterThan(1);
      for (const cuts of [
        [],
        Array.from({ length: 200 }, () => Math.floor(random() * file.length)).sort((a, b) => a - b),
        Array.from({ length: file.length / 997 }, (_, i) => i * 997),
      ])
        expect(byBytes(file, cuts, maxLines, maxBytes).map((b) => [b.firstLine, b.records, text(b), b.key])).toEqual(
          want,
        );
      // Plain lines alone (the fast path only) too.
      const plainWant = (await byReadline(plain, maxLines, maxBytes)).map((b) => [b.records, b.key]);
      expect(byBytes(plain, [1000, 5000], maxLines, maxBytes).map((b) => [b.records, b.key])).toEqual(plainWant);
    }
  });
});

describe('a line longer than MAX_LINE_BYTES', () => {
  const folder = tempFolders('log-batches-');

  /** A file read as the CLI reads it, in reads of `size` bytes: its batches, and the most bytes of an unended line held after any read. */
  async function read(file: string, size: number) {
    const batcher = createBatcher({ maxLines: 5000, maxBytes: 1024 * 1024 });
    const batches: LogBatch[] = [];
    let mostHeld = 0;
    for await (const chunk of createReadStream(file, { highWaterMark: size }) as AsyncIterable<Buffer>) {
      batches.push(...batcher.pushBytes(chunk));
      mostHeld = Math.max(mostHeld, batcher.held());
    }
    batches.push(...batcher.end());
    return { batches, mostHeld };
  }

  it('is never held whole: its head is sent as a record the service skips as too-long, and the lines after it are read, however the file is read', async () => {
    const line = (i: number) =>
      `203.0.113.${i % 250} - - [27/Nov/2026:16:00:00 +0000] "GET /p/${i} HTTP/1.1" 200 5 "-" "GPTBot/1.2"`;
    const lines = (from: number, to: number, end: string) =>
      Buffer.from(Array.from({ length: to - from }, (_, k) => line(from + k) + end).join(''));
    const file = join(folder(), 'access.log');
    writeFileSync(
      file,
      Buffer.concat([
        lines(0, 10, '\n'),
        // A run of NUL bytes, as a torn write leaves, then lines that end in a CR alone.
        Buffer.alloc(6 * 1024 * 1024),
        Buffer.from('\n'),
        lines(10, 1010, '\r'),
        Buffer.from(`${'x'.repeat(3 * 1024 * 1024)}\r\n#${'y'.repeat(2 * 1024 * 1024)}\r`),
        lines(1010, 1020, '\n'),
        // The file's last line, without an end.
        Buffer.from(' '.repeat(2 * 1024 * 1024)),
      ]),
    );
    const keys: string[][] = [];
    for (const size of [997, 64 * 1024, 1024 * 1024]) {
      const { batches, mostHeld } = await read(file, size);
      expect(mostHeld, `reads of ${size} bytes`).toBeLessThanOrEqual(MAX_LINE_BYTES + 2);
      // What the service makes of the batches: every line read, the four past the bound skipped as too-long.
      const records = batches.flatMap((b) => splitLines(Buffer.concat(b.body)));
      const long = records.filter((r) => typeof r === 'string' && r.length > MAX_RECORD_CHARS) as string[];
      expect(long.map((r) => r.length)).toEqual(Array(4).fill(MAX_RECORD_CHARS + 1));
      const parsed = parseBatch(records, 'combined');
      expect(parsed.skipped).toEqual({ 'too-long': 4 });
      expect(parsed.lines.map((l) => l.path)).toEqual(Array.from({ length: 1020 }, (_, i) => `/p/${i}`));
      keys.push(batches.map((b) => b.key));
    }
    // The same batches whatever the reads: their keys depend on the file alone.
    expect(keys[1]).toEqual(keys[0]);
    expect(keys[2]).toEqual(keys[0]);
  });
});
