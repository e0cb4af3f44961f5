import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { tempFolders } from '../helpers/temp.ts';
import { createLogging } from '../../api/log.ts';
import { sealedLine } from '../../api/store/embedded/checksum.ts';
import { openEmbeddedStore, StoreDamagedError } from '../../api/store/embedded/embedded-store.ts';
import { journalFiles } from '../../api/store/embedded/journal.ts';
import { salvageStore, scrubStore } from '../../api/store/embedded/salvage.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { run, runNode } from '../helpers/run.ts';
import { startServerProcess } from '../helpers/server.ts';
import { citizen, message } from './contract.ts';

// Journal entries a crash cannot leave: a whole last line that fails its checksum, sequences that
// do not increase (or pass 2^53), entries that hold their checksum but no operation the store
// knows. Each is damage: the start stops naming it, store-check reports it, store-salvage sets it
// aside; none is cut as a torn tail, skipped, or applied twice.

const lines: string[] = [];
const { logger } = createLogging('info', new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
const fresh = tempFolders('journal-damage-');
const node = 'node_modules/.bin/node';

/** The journal files of a folder, oldest first. */
const journals = (dir: string) => journalFiles(readdirSync(dir));
/** Where a journal file's data ends (the zeros after it were written ahead). */
function dataEnd(path: string): number {
  const bytes = readFileSync(path);
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return end;
}
/** Writes bytes into a file at `at`, as a disk (or a hand) would change them. */
function writeAt(path: string, at: number, bytes: Buffer | string): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, typeof bytes === 'string' ? Buffer.from(bytes) : bytes, 0, Buffer.byteLength(bytes), at);
  closeSync(fd);
}
/** Appends a sealed entry (its checksum right) where the newest journal's data ends. */
function appendEntry(dir: string, entry: object): void {
  const path = join(dir, journals(dir).at(-1)!);
  writeAt(path, dataEnd(path), sealedLine(JSON.stringify(entry)));
}
/** The lines of a journal file's data, with where each starts. */
function entryLines(path: string): { offset: number; text: string }[] {
  const text = readFileSync(path).subarray(0, dataEnd(path)).toString('latin1');
  const out: { offset: number; text: string }[] = [];
  for (let offset = 0; offset < text.length;) {
    const nl = text.indexOf('\n', offset);
    const end = nl === -1 ? text.length : nl + 1;
    out.push({ offset, text: text.slice(offset, end) });
    offset = end;
  }
  return out;
}

/** A folder of one journal holding three oaths (a citizen and a wall shout each); their names. */
async function threeOaths(): Promise<{ dir: string; path: string; names: string[] }> {
  const dir = fresh();
  const store = await openEmbeddedStore({ dir, logger });
  const names = ['first-oath', 'second-oath', 'third-oath'];
  for (const name of names) await store.citizens.add(citizen({ name }), message({ name, wall: true }));
  await store.close();
  const files = journals(dir);
  // The start after the oaths' left an empty file: removed at the next start.
  return {
    dir,
    path: join(
      dir,
      files.find((f) => dataEnd(join(dir, f)) > 0)!,
    ),
    names,
  };
}

/** The citizens' names a store opened on `dir` holds. */
async function namesIn(dir: string): Promise<string[]> {
  const store = await openEmbeddedStore({ dir, logger });
  try {
    return (await store.citizens.list({ limit: 100 })).items.map((c) => c.name).sort();
  } finally {
    await store.close();
  }
}

/** The damage an open of `dir` stops with (fails the test if it opens). */
async function refusal(dir: string): Promise<StoreDamagedError> {
  const opened = await openEmbeddedStore({ dir, logger }).then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (error: unknown) => error,
  );
  expect(opened).toBeInstanceOf(StoreDamagedError);
  return opened as StoreDamagedError;
}

describe('a damaged last journal entry is damage, not a torn tail', () => {
  it('refuses the start naming the file and byte when the last whole line fails its checksum, and zeroes nothing', async () => {
    const { dir, path } = await threeOaths();
    const last = entryLines(path).at(-1)!;
    // One letter changed inside the third oath's line; its newline stays.
    const at = last.offset + last.text.indexOf('"purpose":"') + 11;
    writeAt(path, at, 'T');
    const before = readFileSync(path);
    const damaged = before.toString('latin1', last.offset, last.offset + last.text.length);
    const error = await refusal(dir);
    expect(error.message).toContain(`store damaged: ${path} at byte ${last.offset} `);
    expect(error.message).not.toContain('\n');
    expect(readFileSync(path).equals(before)).toBe(true);
    const found = await scrubStore(dir);
    expect(found.torn).toBeUndefined();
    expect(found.damage).toMatchObject([{ file: path, offset: last.offset, end: last.offset + last.text.length }]);
    // Salvaged: the line is set aside with the ids it holds, the rest starts.
    const { reports, after } = await salvageStore(dir, logger);
    expect(after.damage).toEqual([]);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.memberIds).toHaveLength(1);
    expect(readFileSync(`${path}.damaged`, 'latin1')).toBe(damaged);
    expect(await namesIn(dir)).toEqual(['first-oath', 'second-oath']);
  });

  it('refuses a last line whose newline alone was overwritten: it held a whole entry', async () => {
    const { dir, path } = await threeOaths();
    const last = entryLines(path).at(-1)!;
    writeAt(path, last.offset + last.text.length - 1, 'x');
    expect((await refusal(dir)).message).toContain(`${path} at byte ${last.offset} `);
  });

  it('still cuts a torn write: a last line cut short, or trailing lines holding NUL bytes', async () => {
    // Cut short: the third oath's line without its end.
    let { dir, path } = await threeOaths();
    let last = entryLines(path).at(-1)!;
    writeAt(path, last.offset + 40, Buffer.alloc(last.text.length - 40));
    lines.length = 0;
    expect(await namesIn(dir)).toEqual(['first-oath', 'second-oath']);
    logger.flush();
    expect(lines.join('')).toMatch(/cut a torn tail/);
    // Sectors of one group write never written: zeros inside each of the last two lines, newlines kept.
    ({ dir, path } = await threeOaths());
    const [second, third] = entryLines(path).slice(-2);
    writeAt(path, second!.offset + 30, Buffer.alloc(8));
    writeAt(path, third!.offset + 30, Buffer.alloc(8));
    const found = await scrubStore(dir);
    expect(found.damage).toEqual([]);
    expect(found.torn).toMatchObject({ file: path, offset: second!.offset });
    expect(await namesIn(dir)).toEqual(['first-oath']);
    // The cut is on disk: the next start finds nothing to cut.
    expect((await scrubStore(dir)).torn).toBeUndefined();
  });

  it('refuses a trailing run that holds one whole line without NUL, even with a torn line after it', async () => {
    const { dir, path } = await threeOaths();
    const [second, third] = entryLines(path).slice(-2);
    writeAt(path, second!.offset + second!.text.indexOf('"purpose":"') + 11, 'T');
    writeAt(path, third!.offset + 30, Buffer.alloc(8));
    const before = readFileSync(path);
    expect((await refusal(dir)).message).toContain(`${path} at byte ${second!.offset} `);
    expect(readFileSync(path).equals(before)).toBe(true);
  });
});

describe('sequence numbers must increase, within a safe integer', () => {
  it('refuses an entry whose sequence is past 2^53 - 1, naming why', async () => {
    const { dir, path } = await threeOaths();
    const at = dataEnd(path);
    appendEntry(dir, { seq: 2 ** 53, op: 'message.add', v: message({ name: 'far-future' }) });
    const error = await refusal(dir);
    expect(error.message).toMatch(
      new RegExp(`${path} at byte ${at} .*damaged: sequence 9007199254740992 is no whole number below 2\\^53`),
    );
    const found = await scrubStore(dir);
    expect(found.damage).toMatchObject([{ offset: at, reason: /sequence 9007199254740992/ }]);
  });

  it('keeps the writes made after a sequence of 13 digits: their journal file is read, in order', async () => {
    const { dir } = await threeOaths();
    appendEntry(dir, { seq: 10 ** 12, op: 'message.add', v: message({ name: 'twelve-zeros' }) });
    const store = await openEmbeddedStore({ dir, logger });
    await store.citizens.add(citizen({ name: 'acknowledged-after' }));
    await store.close();
    expect(journals(dir).at(-1)).toBe('journal-1000000000001.jsonl');
    expect(await namesIn(dir)).toEqual(['acknowledged-after', 'first-oath', 'second-oath', 'third-oath']);
    expect((await scrubStore(dir)).damage).toEqual([]);
  });

  it('orders journal files by their numbers, not as text', () => {
    expect(
      journalFiles([
        'journal-1000000000001.jsonl',
        'snapshot.jsonl',
        'journal-999999999999.jsonl',
        'journal-000000000001.jsonl',
      ]),
    ).toEqual(['journal-000000000001.jsonl', 'journal-999999999999.jsonl', 'journal-1000000000001.jsonl']);
  });

  it('refuses a repeated line (a restore that joined files) instead of showing its message twice; salvage keeps one', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    await store.feed.add(message({ name: 'said-once', message: 'only once' }));
    await store.close();
    const path = join(
      dir,
      journals(dir).find((f) => dataEnd(join(dir, f)) > 0)!,
    );
    const line = entryLines(path).at(-1)!;
    writeAt(path, dataEnd(path), line.text);
    const error = await refusal(dir);
    expect(error.message).toContain(`${path} at byte ${line.offset + line.text.length} `);
    expect(error.message).toMatch(/sequence 1 does not follow 1/);
    const { after } = await salvageStore(dir, logger);
    expect(after.damage).toEqual([]);
    const reopened = await openEmbeddedStore({ dir, logger });
    expect((await reopened.feed.list({ limit: 10 })).items.map((m) => m.message)).toEqual(['only once']);
    await reopened.close();
  });
});

describe('entries that hold their checksum but no write the store knows', () => {
  for (const [what, entry, reason] of [
    ['an unknown operation', { seq: 99, op: 'citizen.remove', v: {} }, /unknown operation citizen\.remove/],
    ['a citizen without its fields', { seq: 99, op: 'citizen.add', v: { memberId: 'x' } }, /citizen\.add name /],
    [
      'a unit holding an unknown write',
      { seq: 99, op: 'unit', v: [{ op: 'nothing', v: 1 }] },
      /unit holds an unknown operation nothing/,
    ],
    ['null', null, /not a journal entry/],
  ] as const)
    it(`refuses ${what} as damage naming why; salvage sets it aside`, async () => {
      const { dir, path } = await threeOaths();
      const at = dataEnd(path);
      writeAt(path, at, sealedLine(JSON.stringify(entry)));
      const error = await refusal(dir);
      expect(error.message).toContain(`${path} at byte ${at} `);
      expect(error.message).toMatch(reason);
      expect((await scrubStore(dir)).damage).toMatchObject([{ offset: at, reason }]);
      const { reports, after } = await salvageStore(dir, logger);
      expect(reports).toHaveLength(1);
      expect(after.damage).toEqual([]);
      expect(await namesIn(dir)).toEqual(['first-oath', 'second-oath', 'third-oath']);
    });

  it('replays every kind of write the store makes', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    const record = {
      keyHash: 'k'.repeat(64),
      fingerprint: 'f',
      status: 201,
      sealed: null,
      createdAt: new Date().toISOString(),
    };
    await store.citizens.add(citizen({ name: 'every-kind' }), message({ name: 'every-kind', wall: true }), record);
    await store.feed.add(message({ kind: 'question' }));
    await store.idempotency.put({ ...record, keyHash: 'j'.repeat(64), sealed: 'c2VhbGVk' });
    const sample = {
      decision_id: 'd',
      entity_id: 'e',
      verdict: 'PERSIST',
      delta_t: 0.1,
      delta_window: 0.2,
      failed_predicates: [],
      contraction_attempts: 0,
      fail_closed: false,
      at: new Date().toISOString(),
    };
    await store.drift.record('e', [0.1], 4, sample);
    await store.receipts.append((prev, index) => ({ id: 'sha256:1', receipt: { prev, index } }), {
      drift: [{ entityId: 'e', appended: [0.2], keep: 4, sample }],
    });
    await store.telemetry.save({ version: 1 } as never);
    await store.close();
    expect((await scrubStore(dir)).damage).toEqual([]);
    const again = await openEmbeddedStore({ dir, logger });
    expect((await again.receipts.list({ limit: 5 })).items).toHaveLength(1);
    expect(await again.drift.window('e', new Date())).toEqual([0.1, 0.2]);
    await again.close();
  });
});

// The same through the server and the operator's tools, as the reviewer found them.
describe('the server and the store tools', { timeout: 120_000 }, () => {
  /** Three oaths through a server process, killed (-9) before it saves anything else. */
  async function oathsThenKill(): Promise<{ dir: string; path: string }> {
    const dir = fresh();
    const server = await startServerProcess({ DATA_DIR: dir, TELEMETRY_FLUSH_MS: '100000000' });
    try {
      for (const name of ['first-oath', 'second-oath', 'third-oath']) {
        const r = await fetch(`${server.url}/api/citizenship/oath`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ name, purpose: 'test' }),
        });
        expect(r.status).toBe(201);
      }
    } finally {
      await server.stop('SIGKILL');
    }
    const path = join(
      dir,
      journals(dir).find((f) => dataEnd(join(dir, f)) > 0)!,
    );
    return { dir, path };
  }
  const start = (dir: string) =>
    runNode(['api/main.ts'], { HOST: '127.0.0.1', PORT: '0', DIST_DIR: TEST_DIST, LOG_LEVEL: 'warn', DATA_DIR: dir });

  it('a letter changed in the last acknowledged oath: the start stops in one line, store-check says damaged, store-salvage sets it aside', async () => {
    const { dir, path } = await oathsThenKill();
    const last = entryLines(path).at(-1)!;
    expect(last.text).toContain('"third-oath"');
    writeAt(path, last.offset + last.text.indexOf('"purpose":"test"') + 11, 'T');
    const check = await run(node, ['api/cli/store-check.ts', dir]);
    expect(check.status).toBe(1);
    expect(check.stdout).toContain(`damaged: ${path} bytes ${last.offset}-`);
    expect(check.stdout).not.toContain('torn tail');
    const started = await start(dir);
    expect(started.code).toBe(1);
    expect(started.lines).toEqual([
      expect.stringMatching(new RegExp(`^agent-node cannot start: store damaged: ${path} at byte ${last.offset} `)),
    ]);
    const salvage = await run(node, ['api/cli/store-salvage.ts', dir]);
    expect(salvage.status, salvage.stderr).toBe(0);
    expect(salvage.stdout).toMatch(/member ids seen in them: [0-9a-f-]{36}/);
    expect(readFileSync(`${path}.damaged`, 'utf8')).toContain('"third-oath"');
    expect((await run(node, ['api/cli/store-check.ts', dir])).status).toBe(0);
  });

  it('a checksummed entry of an unknown operation: one line, not a stack; store-check and store-salvage name it', async () => {
    const { dir, path } = await oathsThenKill();
    const at = dataEnd(path);
    appendEntry(dir, { seq: 1000, op: 'citizen.remove', v: {} });
    const check = await run(node, ['api/cli/store-check.ts', dir]);
    expect(check.status).toBe(1);
    expect(check.stdout).toContain(`damaged: ${path} bytes ${at}-`);
    expect(check.stdout).toContain('unknown operation citizen.remove');
    const started = await start(dir);
    expect(started.code).toBe(1);
    expect(started.lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^agent-node cannot start: store damaged: ${path} at byte ${at} .*unknown operation citizen\\.remove`,
        ),
      ),
    ]);
    const salvage = await run(node, ['api/cli/store-salvage.ts', dir]);
    expect(salvage.status, salvage.stderr).toBe(0);
    expect(salvage.stdout).toContain('unknown operation citizen.remove');
    expect((await run(node, ['api/cli/store-check.ts', dir])).status).toBe(0);
  });

  it('a sequence of 2^53 in the journal: the start stops and store-check says damaged, where acknowledged writes vanished', async () => {
    const { dir, path } = await oathsThenKill();
    const at = dataEnd(path);
    appendEntry(dir, { seq: 2 ** 53, op: 'message.add', v: message({ name: 'far-future' }) });
    const check = await run(node, ['api/cli/store-check.ts', dir]);
    expect(check.status).toBe(1);
    expect(check.stdout).toContain(`damaged: ${path} bytes ${at}-`);
    const started = await start(dir);
    expect(started.code).toBe(1);
    expect(started.lines[0]).toMatch(/sequence 9007199254740992/);
    expect(existsSync(`${path}.damaged`)).toBe(false);
  });
});
