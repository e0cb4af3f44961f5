import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogging } from '../../api/log.ts';
import { CHECK_BYTES } from '../../api/store/embedded/checksum.ts';
import { citizenCodec, messageCodec } from '../../api/store/embedded/codec.ts';
import { openEmbeddedStore, StoreDamagedError } from '../../api/store/embedded/embedded-store.ts';
import { salvageStore, scrubStore } from '../../api/store/embedded/salvage.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { run, runNode } from '../helpers/run.ts';
import { citizen, message } from './contract.ts';

// Crash consistency in the spirit of SQLite's crash tests: a store of some hundreds of records in a
// snapshot, deltas and journals; every byte offset of the newest journal's last records cut; a byte
// flipped or zeroed at hundreds of seeded places across every file. A start either recovers every
// record, or refuses naming the file; only the torn tail of the newest journal may be cut.

const { logger } = createLogging('silent', new Writable({ write: (_c, _e, cb) => cb() }));
// In memory where the machine has it: hundreds of starts, each syncing its folder, are not what is tested here.
const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const made: string[] = [];
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(base, prefix));
  made.push(dir);
  return dir;
};
// Hundreds of copies: gone with the run (in memory, where /dev/shm is).
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
/** Small blocks (a dozen records a snapshot line), so damage to one line costs a few records, as at scale. */
const chunks = { chunkBytes: 4096, maxStringBytes: 2048 };

/** Every citizen's and message's id a store holds. */
async function idsIn(dir: string): Promise<Set<string>> {
  const store = await openEmbeddedStore({ dir, logger, chunks });
  try {
    const ids = new Set<string>();
    for (const list of [store.citizens, store.feed]) {
      let cursor: string | undefined;
      do {
        const page = await list.list({ limit: 100, ...(cursor ? { cursor } : {}) });
        for (const item of page.items as ({ memberId: string } | { id: string })[])
          ids.add('memberId' in item ? item.memberId : item.id);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
    }
    return ids;
  } finally {
    await store.close();
  }
}

/** A journal file's data, without the zeros written ahead of the writes. */
function dataOf(path: string): Buffer {
  const bytes = readFileSync(path);
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return bytes.subarray(0, end);
}

/** The ids each line of a file holds (journal entries as JSON, snapshot blocks decoded), by line start. */
function linesOf(path: string): { offset: number; end: number; ids: string[] }[] {
  const bytes = readFileSync(path);
  const lines: { offset: number; end: number; ids: string[] }[] = [];
  for (let offset = 0; offset < bytes.length;) {
    const nl = bytes.indexOf(10, offset);
    const end = nl === -1 ? bytes.length : nl + 1;
    const text = bytes.toString('utf8', offset + CHECK_BYTES, nl === -1 ? end : nl);
    const ids: string[] = [];
    if (text.startsWith('c"') || text.startsWith('m"')) {
      const codec = text[0] === 'c' ? citizenCodec : messageCodec;
      const block = Buffer.from(text.slice(2, -1), 'base64');
      for (let at = 0; at < block.length; at = codec.end(block, at)) ids.push(codec.idAt(block, at));
    } else if (text.startsWith('{')) {
      for (const m of text.matchAll(/"(?:memberId|id)":"([0-9a-f-]{36})"/g)) ids.push(m[1]!);
    }
    lines.push({ offset, end, ids });
    offset = end;
  }
  return lines;
}

/** `node api/main.ts` (or another entry) on a data folder, run to its end: exit code and every line it printed. */
function startOn(
  dir: string,
  args = ['api/main.ts'],
  env: Record<string, string> = {},
): Promise<{ code: number | null; lines: string[] }> {
  return runNode(args, {
    HOST: '127.0.0.1',
    PORT: '0',
    DIST_DIR: TEST_DIST,
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
    ...env,
  });
}

/** A seeded generator (mulberry32): the same offsets every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let golden: string;
let all: Set<string>;
let files: string[];
let newest: string;

beforeAll(async () => {
  golden = temp('integrity-golden-');
  let n = 0;
  const oath = (store: Awaited<ReturnType<typeof openEmbeddedStore>>) =>
    store.citizens.add(citizen({ name: `member-${++n}` }), message({ name: `member-${n}`, wall: true }));
  // A snapshot of 150 oaths, then a delta of 20 more, then three runs of journals.
  let store = await openEmbeddedStore({ dir: golden, logger, chunks });
  for (let i = 0; i < 150; i++) await oath(store);
  await store.compact();
  await store.close();
  store = await openEmbeddedStore({ dir: golden, logger, chunks, compactEvery: 20 });
  for (let i = 0; i < 20; i++) await oath(store);
  await store.close();
  for (let run = 0; run < 3; run++) {
    store = await openEmbeddedStore({ dir: golden, logger, chunks });
    for (let i = 0; i < 40; i++) await oath(store);
    for (let i = 0; i < 5; i++) await store.feed.add(message({ name: `note-${run}-${i}` }));
    await store.close();
  }
  // The zeros written ahead of the writes are left out: the copies stay small and nothing else changes.
  for (const f of readdirSync(golden).filter((f) => f.startsWith('journal-')))
    writeFileSync(join(golden, f), dataOf(join(golden, f)));
  files = readdirSync(golden)
    .filter((f) => statSync(join(golden, f)).size > 0 && /^(journal|snapshot)/.test(f))
    .sort();
  newest = files.filter((f) => f.startsWith('journal-')).at(-1)!;
  all = await idsIn(copy());
});

/** A copy of the golden store to damage. */
function copy(): string {
  const dir = temp('integrity-');
  cpSync(golden, dir, { recursive: true });
  return dir;
}

describe('checksummed embedded store: crash consistency', () => {
  it('holds hundreds of records in a snapshot, a delta and several journals', () => {
    expect(files).toContain('snapshot.jsonl');
    expect(files.some((f) => /^snapshot-\d+\.jsonl$/.test(f))).toBe(true);
    expect(files.filter((f) => f.startsWith('journal-')).length).toBeGreaterThanOrEqual(3);
    // 150 + 20 + 3 × 40 oaths (a citizen and a shout each) and 15 messages.
    expect(all.size).toBe(2 * 290 + 15);
  });

  it('(a) recovers every record before a cut at any byte of the newest journal’s last records', async () => {
    // Journals only (two runs of 150 messages): each of the hundreds of starts replays them all.
    const dir = temp('integrity-cut-');
    for (let run = 0; run < 2; run++) {
      const store = await openEmbeddedStore({ dir, logger, chunks });
      for (let i = 0; i < 150; i++) await store.feed.add(message({ name: `speaker-${run}-${i}` }));
      await store.close();
    }
    const journals = readdirSync(dir)
      .filter((f) => f.startsWith('journal-'))
      .sort();
    expect(journals).toHaveLength(2);
    const path = join(dir, journals[1]!);
    const bytes = dataOf(path);
    writeFileSync(path, bytes);
    const lines = linesOf(path);
    const before = await idsIn(dir);
    expect(before.size).toBe(300);
    // The last two entries: every offset from the start of the first through the end.
    for (let cut = lines.at(-2)!.offset; cut <= bytes.length; cut++) {
      for (const f of readdirSync(dir)) if (!journals.includes(f)) rmSync(join(dir, f));
      writeFileSync(path, bytes.subarray(0, cut));
      const lost = lines.filter((l) => l.end > cut).flatMap((l) => l.ids);
      const ids = await idsIn(dir);
      expect(ids.size, `cut at ${cut}`).toBe(before.size - lost.length);
      for (const id of lost) expect(ids.has(id)).toBe(false);
    }
  }, 180_000);

  it('(b, c) refuses a start naming the file for a flipped or zeroed byte anywhere but the torn tail, and a salvage keeps every intact record', async () => {
    const next = random(36);
    const total = files.reduce((sum, f) => sum + statSync(join(golden, f)).size, 0);
    const tail = linesOf(join(golden, newest)).at(-1)!;
    let refused = 0;
    let salvaged = 0;
    for (let trial = 0; trial < 300; trial++) {
      // An offset across every file, by their sizes; a NUL or a flipped byte.
      let at = Math.floor(next() * total);
      const file = files.find((f) => {
        const size = statSync(join(golden, f)).size;
        if (at < size) return true;
        at -= size;
        return false;
      })!;
      const dir = copy();
      const path = join(dir, file);
      const bytes = readFileSync(path);
      const zero = next() < 0.3;
      bytes[at] = zero ? 0 : bytes[at]! ^ (1 + Math.floor(next() * 255));
      if (zero && readFileSync(join(golden, file))[at] === 0) continue;
      writeFileSync(path, bytes);
      const lines = linesOf(join(golden, file));
      const hit = lines.findIndex((l) => at >= l.offset && at < l.end);
      // A newline lost joins its line to the next: both are damaged.
      const touched = lines.slice(hit, at === lines[hit]!.end - 1 ? hit + 2 : hit + 1);
      const lost = new Set(touched.flatMap((l) => l.ids));
      // A torn write leaves NUL bytes (or a line cut short): a NUL in the last entry is one; any other
      // byte changed there is damage to an entry that may have been acknowledged.
      const inTail = file === newest && at >= tail.offset && bytes[at] === 0;
      try {
        const ids = await idsIn(dir);
        // Only the torn tail may be cut without a refusal: never fewer records otherwise.
        expect(inTail, `${file} byte ${at} opened`).toBe(true);
        expect(ids.size).toBe(all.size - tail.ids.length);
        continue;
      } catch (error) {
        if (!(error instanceof StoreDamagedError)) throw error;
        expect(error.message).toContain(join(dir, file));
        expect(error.message).toMatch(/at byte \d+ .* intact .* after them .*npm run store-salvage -- /);
        expect(error.message).not.toContain('\n');
        refused++;
      }
      // Salvage one refusal in three (each rewrites the store): every record outside the damaged lines comes back.
      if (trial % 3 !== 0) continue;
      const { after, reports } = await salvageStore(dir, logger, chunks);
      expect(after.damage).toEqual([]);
      expect(reports.length).toBeGreaterThan(0);
      expect(readFileSync(`${path}.damaged`).length).toBeGreaterThan(0);
      const ids = await idsIn(dir);
      for (const id of all) if (!lost.has(id)) expect(ids.has(id), `${file} byte ${at}: ${id}`).toBe(true);
      // What the report names is what was in the damaged bytes (or an id the damage itself changed).
      for (const id of reports.flatMap((r) => [...r.memberIds, ...r.messageIds]))
        expect(lost.has(id) || !all.has(id), `${file} byte ${at}: reported ${id}`).toBe(true);
      salvaged++;
    }
    expect(refused).toBeGreaterThan(200);
    expect(salvaged).toBeGreaterThan(60);
  }, 300_000);

  it('reads a store of the formats before checksums, and writes it anew with them at its first start', async () => {
    const dir = copy();
    // The older formats: journal lines and snapshot lines without their checksums (and the section letters).
    for (const f of files) {
      const lines = readFileSync(join(dir, f), 'utf8').split('\n');
      const old = lines.map((l) => {
        if (l === '') return l;
        const text = l.slice(CHECK_BYTES);
        if (f.startsWith('journal-')) return text;
        if (text[0] === 'h') return JSON.stringify({ ...JSON.parse(text.slice(1)), version: 3 });
        return text.slice(1);
      });
      writeFileSync(join(dir, f), old.join('\n'));
    }
    // The format before checksums cut a torn tail only off the file it reopened: an older journal may end in one.
    const older = files.find((f) => f.startsWith('journal-'))!;
    writeFileSync(join(dir, older), `${readFileSync(join(dir, older), 'utf8')}{"seq":99999,"op":"citizen.a`);
    expect((await scrubStore(dir, chunks)).damage).toEqual([]);
    expect(await idsIn(dir)).toEqual(all);
    // Written anew: one snapshot with checksums, the old journals and deltas gone.
    const now = readdirSync(dir).filter((f) => statSync(join(dir, f)).size > 0);
    expect(now.filter((f) => /^snapshot-/.test(f) || /^journal-/.test(f))).toEqual([]);
    expect(readFileSync(join(dir, 'snapshot.jsonl'), 'utf8')).toMatch(/^[0-9a-f]{8} h\{/);
    expect(await idsIn(dir)).toEqual(all);
  });

  it(
    'stops `npm start` and store-check with one line naming the file, byte and command; salvage leaves a store that starts',
    {
      timeout: 120_000,
    },
    async () => {
      const dir = copy();
      const file = files.find((f) => f.startsWith('journal-'))!;
      const path = join(dir, file);
      const bytes = readFileSync(path);
      bytes[Math.floor(bytes.length / 3)] = 0;
      writeFileSync(path, bytes);
      const node = 'node_modules/.bin/node';
      const check = await run(node, ['api/cli/store-check.ts', dir]);
      expect(check.status).toBe(1);
      expect(check.stdout).toContain(`damaged: ${path} bytes `);
      const start = await startOn(dir);
      expect(start.code).toBe(1);
      expect(start.lines).toHaveLength(1);
      expect(start.lines[0]).toMatch(
        new RegExp(`^agent-node cannot start: store damaged: ${path} at byte \\d+ .*npm run store-salvage -- ${dir}`),
      );
      // The move to PostgreSQL checks every record before it connects: a damaged store is named, nothing copied.
      const move = await startOn(dir, ['api/cli/move-to-postgres.ts', '--from', dir], {
        DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/never_created_by_a_refused_move',
      });
      expect(move.code).toBe(1);
      expect(move.lines.join('\n')).toContain(`move-to-postgres: store damaged: ${path} at byte `);
      const salvage = await run(node, ['api/cli/store-salvage.ts', dir]);
      expect(salvage.status, salvage.stderr).toBe(0);
      expect(salvage.stdout).toMatch(/member ids seen in them: [0-9a-f-]{36}/);
      expect(basename(`${path}.damaged`)).toBe(`${file}.damaged`);
      const clean = await run(node, ['api/cli/store-check.ts', dir]);
      expect(clean.status).toBe(0);
      expect(clean.stdout).toMatch(/^clean: /);
    },
  );
});
