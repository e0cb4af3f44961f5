import {
  closeSync,
  cpSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogging } from '../../api/log.ts';
import { nameKeys } from '../../api/names/name-rule.ts';
import { openEmbeddedStore } from '../../api/store/index.ts';
import { holdingsOf } from '../../api/store/embedded/embedded-store.ts';
import { Journal, PREALLOCATE_BYTES } from '../../api/store/embedded/journal.ts';
import { emptyData, readSnapshot, SnapshotFile, type LoadedData } from '../../api/store/embedded/snapshot.ts';
import { callerWindowKey, DRIFT_BOUNDS } from '../../api/store/types.ts';
import { waitFor } from '../helpers/wait.ts';
import { citizen, message, move, runStoreContract } from './contract.ts';
import { snapshotOnDisk } from '../helpers/snapshot.ts';

/** Every entry a journal replays, in order. */
async function replayed(journal: Journal, onTorn: (file: string, offset: number) => void = () => {}) {
  const entries: { seq: number; v: unknown }[] = [];
  const scan = await journal.replay((e) => entries.push(e));
  if (scan.torn) onTorn(scan.torn.file, scan.torn.offset);
  expect(scan.damage).toEqual([]);
  return entries;
}

const lines: string[] = [];
const { logger } = createLogging('info', new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
const fresh = () => mkdtempSync(join(tmpdir(), 'embedded-'));
/** A journal file's data: up to its first zero byte (the rest is preallocated zeros). */
const journalData = (path: string) => {
  const content = readFileSync(path);
  const end = content.indexOf(0);
  return content.toString('utf8', 0, end === -1 ? content.length : end);
};
/** Writes bytes where the journal's data ends, as a write cut short by a crash would leave them. */
function tear(path: string, text: string): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, text, Buffer.byteLength(journalData(path)));
  closeSync(fd);
}

runStoreContract(
  'embedded',
  async (options = {}) => {
    const dir = fresh();
    return {
      store: await openEmbeddedStore({ dir, logger, ...options }),
      reopen: () => openEmbeddedStore({ dir, logger, ...options }),
    };
  },
  { shared: false },
);

describe('embedded store on disk', () => {
  it('leaves out, at open, the idempotency records the journal brings back expired', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    const made = Date.now() - 25 * 60 * 60 * 1000;
    await store.idempotency.put({
      keyHash: 'old',
      fingerprint: 'f',
      status: 201,
      sealed: 's',
      createdAt: new Date(made).toISOString(),
    });
    await store.idempotency.put({
      keyHash: 'young',
      fingerprint: 'f',
      status: 201,
      sealed: 's',
      createdAt: new Date().toISOString(),
    });
    await store.close();
    const again = await openEmbeddedStore({ dir, logger });
    expect(await again.idempotency.get('old', new Date(made + 1000))).toBeNull();
    expect(await again.idempotency.get('young', new Date())).not.toBeNull();
    await again.close();
  });

  it('journals a citizen, its shout and its idempotency record as one entry', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    const c = citizen();
    await store.citizens.add(c, message({ wall: true, citizenId: c.memberId }), {
      keyHash: 'one',
      fingerprint: 'f',
      status: 201,
      sealed: 's',
      createdAt: new Date().toISOString(),
    });
    await store.close();
    const journal = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
    const lines = journalData(join(dir, journal)).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!.slice(9)).v.map((w: { op: string }) => w.op)).toEqual([
      'citizen.add',
      'message.add',
      'idempotency.put',
    ]);
  });

  it('keeps every one of 100 concurrent writes in the journal', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    await Promise.all(Array.from({ length: 100 }, () => store.citizens.add(citizen())));
    await store.close();
    const journal = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
    expect(journalData(join(dir, journal)).trim().split('\n')).toHaveLength(100);
  });

  it('groups concurrent appends into shared disk writes (group commit)', async () => {
    const journal = new Journal(fresh());
    await journal.rotate(1);
    await Promise.all(Array.from({ length: 100 }, (_, i) => journal.append({ seq: i + 1, op: 'x', v: i })));
    expect(journal.diskWrites).toBeGreaterThan(0);
    expect(journal.diskWrites).toBeLessThan(10);
    await journal.append({ seq: 101, op: 'x', v: 0 });
    expect(journal.diskWrites).toBeLessThan(11);
    await journal.close();
  });

  it('fills its file with zeros ahead of the writes and, reopened, goes on where the data ends', async () => {
    const dir = fresh();
    const first = new Journal(dir);
    await first.rotate(1);
    await first.append({ seq: 1, op: 'x', v: 'a' });
    await first.append({ seq: 2, op: 'x', v: 'b' });
    await first.close();
    const [file] = readdirSync(dir);
    expect(statSync(join(dir, file!)).size).toBeGreaterThanOrEqual(PREALLOCATE_BYTES);
    const again = new Journal(dir);
    await again.rotate(1);
    expect(again.size).toBe(Buffer.byteLength(journalData(join(dir, file!))));
    await again.append({ seq: 3, op: 'x', v: 'c' });
    expect((await replayed(again, () => expect.unreachable())).map((e) => e.v)).toEqual(['a', 'b', 'c']);
    await again.close();
  });

  it('rotates while a write is under way and the next write is chained onto it, without waiting forever', async () => {
    const dir = fresh();
    const journal = new Journal(dir);
    await journal.rotate(1);
    let chained: Promise<void> | undefined;
    // The write under way resolves, and its continuation appends again before the rotation resumes.
    const first = journal.append({ seq: 1, op: 'x', v: 1 }).then(() => {
      chained = journal.append({ seq: 2, op: 'x', v: 2 });
    });
    const rotated = journal.rotate(2);
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('rotation never finished')), 2000));
    await Promise.race([Promise.all([first, rotated]), timeout]);
    await Promise.race([chained, timeout]);
    expect((await replayed(journal)).map((e) => e.seq)).toEqual([1, 2]);
    expect(
      readdirSync(dir)
        .filter((f) => f.startsWith('journal-'))
        .sort(),
    ).toEqual(['journal-000000000001.jsonl', 'journal-000000000002.jsonl']);
    await journal.close();
  });

  it('cuts a torn line off the journal file it reopens, so the next acknowledged entry is not glued to it', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    await store.citizens.add(citizen({ name: 'kept-before' }));
    await store.close();
    // A crash during the first write of the next file: its name is the next entry's, so the next start reopens it.
    const next = readdirSync(dir)
      .filter((f) => f.startsWith('journal-'))
      .sort()
      .at(-1)!
      .replace(/\d{12}/, (n) => String(Number(n) + 1).padStart(12, '0'));
    writeFileSync(join(dir, next), '{"seq":2,"op":"citizen.add","v":{"memberId":"01a1');
    const reopened = await openEmbeddedStore({ dir, logger });
    await reopened.citizens.add(citizen({ name: 'acknowledged-after' }));
    await reopened.close();
    const third = await openEmbeddedStore({ dir, logger });
    expect((await third.citizens.list({ limit: 10 })).items.map((c) => c.name).sort()).toEqual([
      'acknowledged-after',
      'kept-before',
    ]);
    await third.close();
  });

  it('cuts a torn last journal line, reports it, and opens', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    await store.citizens.add(citizen({ name: 'before-the-crash' }));
    await store.close();
    const journal = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
    tear(join(dir, journal), '{"seq":2,"op":"citizen.add","v":{"memberId":"01a1');
    lines.length = 0;
    const reopened = await openEmbeddedStore({ dir, logger });
    expect((await reopened.citizens.list({ limit: 10 })).items.map((c) => c.name)).toEqual(['before-the-crash']);
    logger.flush();
    expect(lines.join('')).toMatch(/cut a torn tail/);
    await reopened.citizens.add(citizen({ name: 'after' }));
    await reopened.close();
    const third = await openEmbeddedStore({ dir, logger });
    expect((await third.citizens.stats()).total).toBe(2);
    await third.close();
  });

  it('compacts the journal into the lowdb snapshot and reopens from both', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger, compactEvery: 10 });
    for (let i = 0; i < 25; i++) await store.citizens.add(citizen());
    await store.close();
    expect(readdirSync(dir)).toContain('snapshot.jsonl');
    expect(snapshotOnDisk(dir)!.records.citizens.length).toBeGreaterThanOrEqual(10);
    expect(readdirSync(dir).filter((f) => f.startsWith('journal-')).length).toBeLessThanOrEqual(2);
    const reopened = await openEmbeddedStore({ dir, logger });
    expect((await reopened.citizens.stats()).total).toBe(25);
    await reopened.close();
  });

  it('folds the journal into deltas of what is new, and rewrites the whole register only once they hold as much as the snapshot', async () => {
    const dir = fresh();
    logger.flush();
    const from = lines.length;
    const store = await openEmbeddedStore({ dir, logger, compactEvery: 10 });
    for (let i = 0; i < 320; i++) await store.citizens.add(citizen());
    await store.close();
    logger.flush();
    const compactions = lines
      .slice(from)
      .join('')
      .split('\n')
      .filter((l) => l.includes('"msg":"store compacted"'))
      .map((l) => JSON.parse(l) as { into: string; bytes: number; snapshotBytes: number });
    const wholes = compactions.filter((c) => c.into === 'snapshot');
    const deltas = compactions.filter((c) => c.into === 'delta');
    // A rewrite of everything waits until the deltas hold as much as the snapshot: the snapshot
    // about doubles each time (10, 20, 40, ... citizens), so its cost a write stays the same.
    expect(wholes.length).toBeGreaterThanOrEqual(3);
    expect(wholes.length).toBeLessThanOrEqual(8);
    // The other compactions (every 10 entries here) each write only what is new.
    expect(deltas.length).toBeGreaterThan(15);
    const written = deltas.reduce((n, d) => n + d.bytes, 0);
    expect(written).toBeLessThan(2 * wholes.at(-1)!.snapshotBytes + deltas.length * 1024);
    expect(Math.max(...deltas.map((d) => d.bytes))).toBeLessThan(wholes.at(-1)!.snapshotBytes);
    const reopened = await openEmbeddedStore({ dir, logger });
    expect((await reopened.citizens.stats()).total).toBe(320);
    await reopened.close();
  });

  it('keeps every write made while a snapshot is being written, exactly once', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger, compactEvery: 300 });
    // Bursts large enough that compactions run (in pieces) while later writes land. Messages are
    // not deduplicated on replay, so a snapshot that caught later writes would show them twice.
    for (let burst = 0; burst < 5; burst++)
      await Promise.all(Array.from({ length: 400 }, (_, i) => store.feed.add(message({ message: `m-${burst}-${i}` }))));
    await store.close();
    const reopened = await openEmbeddedStore({ dir, logger });
    const texts: string[] = [];
    for (let cursor: string | null | undefined = undefined; ;) {
      const page = await reopened.feed.list({ limit: 200, cursor });
      texts.push(...page.items.map((m) => m.message));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(texts.length).toBe(2000);
    expect(new Set(texts).size).toBe(2000);
    await reopened.close();
  });
});

describe('drift windows on disk', () => {
  const key = (i: number) => callerWindowKey(`invented-${i}`, '203.0.113.9');
  /** The windows a snapshot and its deltas hold, each line applied in order (one without deltas drops its key). */
  const folded = (data: LoadedData | null) => {
    const windows = new Map<string, number[]>();
    for (const [k, deltas] of data?.windows ?? []) {
      windows.delete(k);
      if (deltas.length > 0) windows.set(k, deltas);
    }
    return [...windows.keys()];
  };

  it('leaves the windows a client trimmed out of the snapshot and its deltas, and a start from them holds the same', async () => {
    const dir = fresh();
    const options = { dir, logger, driftBounds: { ...DRIFT_BOUNDS, perClient: 3 }, compactEvery: 4 };
    const t0 = Date.now() - 60_000;
    const store = await openEmbeddedStore(options);
    // Citizens enough that four journal entries are less than the snapshot: the next compaction is a delta.
    for (let i = 0; i < 60; i++) await store.citizens.add(citizen());
    for (let i = 0; i < 10; i++) await move(store, key(i), 0.3, t0 + i);
    await store.compact();
    expect((await readSnapshot(dir))!.windows.map(([k]) => k)).toEqual([key(7), key(8), key(9)]);
    // Each new window drops the client's least recently moved: the delta says so with a line without deltas.
    for (let i = 10; i < 14; i++) await move(store, key(i), 0.3, t0 + i);
    const deltas = () => readdirSync(dir).filter((f) => /^snapshot-\d+\.jsonl$/.test(f));
    await waitFor(deltas, { until: (files) => files.length > 0, what: 'a delta' });
    const read = await waitFor(() => readSnapshot(dir), {
      until: (data) => folded(data).length === 3,
      what: 'the delta written whole',
    });
    expect(read!.windows.filter(([, d]) => d.length === 0).map(([k]) => k)).toEqual(
      expect.arrayContaining([key(7), key(8), key(9), key(10)]),
    );
    expect(folded(read)).toEqual([key(11), key(12), key(13)]);
    await store.close();
    const again = await openEmbeddedStore(options);
    expect([...holdingsOf(again).windows()].map(([k]) => k)).toEqual([key(11), key(12), key(13)]);
    await again.compact();
    expect((await readSnapshot(dir))!.windows.map(([k, d]) => [k, d])).toEqual(
      [11, 12, 13].map((i) => [key(i), [0.3]]),
    );
    await again.close();
  });

  it('takes windows a snapshot kept without a time as moved at the start that reads them, and writes that time at once', async () => {
    const dir = fresh();
    await new SnapshotFile(join(dir, 'snapshot.jsonl'), join(dir, 'snapshot.json')).write({
      ...emptyData(),
      seq: 3,
      windows: [
        [key(1), [0.1]],
        [key(2), [0.2]],
      ],
    });
    const opened = Date.now() - 1000;
    const store = await openEmbeddedStore({ dir, logger, now: () => new Date(opened) });
    expect(await store.drift.window(key(1), new Date(opened + DRIFT_BOUNDS.retentionMs - 1))).toEqual([0.1]);
    expect(await store.drift.window(key(1), new Date(opened + DRIFT_BOUNDS.retentionMs))).toEqual([]);
    await store.close();
    expect((await readSnapshot(dir))!.windows).toEqual([
      [key(1), [0.1], opened],
      [key(2), [0.2], opened],
    ]);
  });
});

describe('names stored before they were unique', () => {
  it('keeps both citizens of a pair that already looked alike; the older holds the name and no third may join', async () => {
    const dir = fresh();
    const older = citizen({ name: 'example-agent' });
    const younger = citizen({ name: 'EXAMPLE-AGENT' });
    // A snapshot written before names were unique.
    writeFileSync(
      join(dir, 'snapshot.json'),
      JSON.stringify({ seq: 2, citizens: [older, younger], messages: [], idempotency: [], receipts: [] }),
    );
    const store = await openEmbeddedStore({ dir, logger });
    expect((await store.citizens.list({ limit: 10 })).items.map((c) => c.name)).toEqual([
      'EXAMPLE-AGENT',
      'example-agent',
    ]);
    expect((await store.citizens.holding('Example-Agent'))?.memberId).toBe(older.memberId);
    await expect(store.citizens.add(citizen({ name: 'example-agent' }))).rejects.toMatchObject({
      code: 'NAME_TAKEN',
      extra: { heldBy: 'example-agent' },
    });
    await store.close();
  });
});

describe('the name index: hashes to places, not a map of key strings', () => {
  it('holds every name across a compaction, a journal tail and a restart, and a replayed oath is no twin of itself', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    const inSnapshot = citizen({ name: 'Snow-Goose' });
    await store.citizens.add(inSnapshot);
    await store.compact();
    const inJournal = citizen({ name: 'Barn-Owl' });
    await store.citizens.add(inJournal);
    await store.close();

    const again = await openEmbeddedStore({ dir, logger });
    expect((await again.citizens.holding('snow-goose'))?.memberId).toBe(inSnapshot.memberId);
    expect((await again.citizens.holding('BARN-OWL'))?.memberId).toBe(inJournal.memberId);
    await expect(again.citizens.add(citizen({ name: 'ＳＮＯＷ-ＧＯＯＳＥ' }))).rejects.toMatchObject({
      code: 'NAME_TAKEN',
      extra: { heldBy: 'Snow-Goose' },
    });
    await expect(again.citizens.add(citizen({ name: 'barn-owl' }))).rejects.toMatchObject({
      code: 'NAME_TAKEN',
      extra: { heldBy: 'Barn-Owl' },
    });
    // The same citizen written again (a replay) holds its own name: accepted, and stored once.
    await again.citizens.add(inJournal);
    expect((await again.citizens.stats()).total).toBe(2);
    await again.close();
  });

  it('checks the names of the places a hash gives: a name whose key shares a hash with a held one is free', async () => {
    // FNV-1a over UTF-16 units, as the index hashes a key.
    const hash = (key: string) => {
      let h = 0x811c9dc5;
      for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
      return h >>> 0;
    };
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const name = `heron-${i}`;
      const h = hash(`folded:${nameKeys(name).folded}`);
      const other = seen.get(h);
      if (other !== undefined) pair = [other, name];
      else seen.set(h, name);
    }
    const store = await openEmbeddedStore({ dir: fresh(), logger });
    const held = citizen({ name: pair[0] });
    await store.citizens.add(held);
    expect(await store.citizens.holding(pair[1])).toBeNull();
    await store.citizens.add(citizen({ name: pair[1] }));
    expect((await store.citizens.holding(pair[0]))?.memberId).toBe(held.memberId);
    expect((await store.citizens.stats()).total).toBe(2);
    await store.close();
  });
});

describe('name keys carried by the snapshot: a start reads their hashes instead of computing them', () => {
  const held = ['Snow-Goose', 'PayPal', 'Мария', 'ΑΘΗΝΑ', '山田太郎', 'Zoë', 'ｗｉｄｅ　ｎａｍｅ', 'l1ly'];
  // Look-alikes of held names (case, width, confusable letters, scripts) and names that are free.
  const probes = [
    'snow-goose',
    'ＳＮＯＷ-ＧＯＯＳＥ',
    'PayPaI',
    'paypal',
    'мария',
    'αθηνα',
    '山田太郎',
    'ZOË',
    'Zoe',
    'wide name',
    'lily',
    'I1Iy',
    'heron',
    'Snow-Goos',
  ];
  const snapshotPath = (dir: string) => join(dir, 'snapshot.jsonl');
  /** A data folder whose snapshot, written by the store, holds the held names (and more), with their keys. */
  async function grown(): Promise<{ dir: string; holders: (string | null)[] }> {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    for (const name of held) await store.citizens.add(citizen({ name }));
    for (let i = 0; i < 50; i++) await store.citizens.add(citizen({ name: `filler-${i}` }));
    await store.compact();
    const holders = await Promise.all(probes.map(async (p) => (await store.citizens.holding(p))?.name ?? null));
    await store.close();
    return { dir, holders };
  }
  /** The snapshot's data as the store reads it. */
  async function data(dir: string) {
    return (await new SnapshotFile(snapshotPath(dir), join(dir, 'snapshot.json')).read())!;
  }
  /** The same folder's state, its snapshot written again by `write`, in a fresh folder. */
  async function rewritten(dir: string, write: (path: string) => Promise<void> | void): Promise<string> {
    const copy = fresh();
    await write(snapshotPath(copy));
    expect(existsSync(snapshotPath(copy))).toBe(true);
    expect(readdirSync(dir).filter((f) => f.startsWith('journal-') && statSync(join(dir, f)).size > 0)).toEqual([]);
    return copy;
  }
  /** How a start on `dir` sees each probe: the name holding it, and whether an oath by it is refused (tried on a copy). */
  async function seen(dir: string) {
    const copy = fresh();
    cpSync(dir, copy, { recursive: true });
    logger.flush();
    lines.length = 0;
    const store = await openEmbeddedStore({ dir: copy, logger });
    logger.flush();
    const opened = lines
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { nameKeys?: string })
      .findLast((l) => l.nameKeys);
    const holders = await Promise.all(probes.map(async (p) => (await store.citizens.holding(p))?.name ?? null));
    const refused: boolean[] = [];
    for (const name of probes)
      refused.push(
        await store.citizens.add(citizen({ name })).then(
          () => false,
          (error: { code?: string }) => error.code === 'NAME_TAKEN',
        ),
      );
    await store.close();
    return { nameKeys: opened?.nameKeys, holders, refused };
  }
  /** Writes a snapshot of version 2 (a record a line, no name keys), as the store wrote them before. */
  function versionTwo(path: string, d: LoadedData): void {
    const quoted = (blocks: Iterable<string>) => [...blocks].map((b) => JSON.stringify(b));
    const header = {
      format: 'agentnode-embedded-snapshot',
      version: 2,
      seq: d.seq,
      counts: {
        citizens: d.citizens.length,
        messages: d.messages.length,
        idempotency: d.idempotency.length,
        receipts: d.receipts.length,
        windows: d.windows.length,
      },
      drift: d.drift,
      telemetry: d.telemetry,
    };
    // A block of at most one byte holds one record: a record a line.
    const text = [
      JSON.stringify(header),
      ...quoted(d.citizens.blocks(1)),
      ...quoted(d.messages.blocks(1)),
      ...d.idempotency.map((r) => JSON.stringify(r)),
      ...quoted(d.receipts.blocks(1)),
      ...d.windows.map((w) => JSON.stringify(w)),
    ];
    writeFileSync(path, `${text.join('\n')}\n`);
  }

  it('opens with the hashes it carries and holds every name exactly as a start that computes them', async () => {
    const { dir, holders } = await grown();
    // Ten look-alikes held; 'lily', 'Zoe', 'heron' and 'Snow-Goos' free.
    expect(holders.filter((h) => h !== null).length).toBe(10);
    const read = await data(dir);
    expect(read.citizens.carriesWords).toBe(true);
    expect(read.nameKeys).toMatch(/^keyHash of folded: and shaped: entries; name keys 1; unicode /);

    const withoutKeys = await rewritten(dir, (path) =>
      new SnapshotFile(path, `${path}.old`).write({ ...read, nameKeys: null }),
    );
    const versionTwoDir = await rewritten(dir, async (path) => versionTwo(path, await data(dir)));
    // A header, and a line for each of the 58 citizens.
    expect(readFileSync(snapshotPath(versionTwoDir), 'utf8').split('\n').length).toBeGreaterThan(58);

    const carried = await seen(dir);
    const computed = await seen(withoutKeys);
    const old = await seen(versionTwoDir);
    expect(carried.nameKeys).toBe('read');
    expect(computed.nameKeys).toBe('computed');
    expect(old.nameKeys).toBe('computed');
    expect(carried.holders).toEqual(holders);
    expect(computed.holders).toEqual(holders);
    expect(old.holders).toEqual(holders);
    expect(carried.refused).toEqual(holders.map((h) => h !== null));
    expect(computed.refused).toEqual(carried.refused);
    expect(old.refused).toEqual(carried.refused);
  });

  it('writes a snapshot whose keys a start computed anew at once, so the next start reads them', async () => {
    const { dir, holders } = await grown();
    const old = await rewritten(dir, async (path) => versionTwo(path, await data(dir)));
    const first = await seen(old);
    expect(first.nameKeys).toBe('computed');
    // seen() tried oaths on a copy; this start only opens and closes (a close waits for the rewrite).
    await (await openEmbeddedStore({ dir: old, logger })).close();
    // Written anew in the format of now: every line behind its checksum, the header's letter first.
    const header = JSON.parse(readFileSync(snapshotPath(old), 'utf8').split('\n')[0]!.slice(10)) as {
      version: number;
    };
    expect(header.version).toBe(4);
    const next = await seen(old);
    expect(next.nameKeys).toBe('read');
    expect(next.holders).toEqual(holders);
  });

  it('computes them again when they were made under another stamp (another Unicode, ICU or confusables table), and uses what it reads under its own', async () => {
    const { dir, holders } = await grown();
    const read = await data(dir);
    const foreign = await rewritten(dir, (path) =>
      new SnapshotFile(path, `${path}.old`).write({ ...read, nameKeys: `${read.nameKeys} (another machine)` }),
    );
    const again = await seen(foreign);
    expect(again.nameKeys).toBe('computed');
    expect(again.holders).toEqual(holders);
    // Under its own stamp a start trusts what it reads (that is the point): zeroed hashes hide every
    // held name from a lookup, so the ones above were read, not computed.
    for (let i = 0; i < read.citizens.length; i++) read.citizens.setWords(i, 0, 0);
    const zeroed = await rewritten(dir, (path) => new SnapshotFile(path, `${path}.old`).write(read));
    const trusted = await seen(zeroed);
    expect(trusted.nameKeys).toBe('read');
    expect(trusted.holders).toEqual(probes.map(() => null));
  });

  it('carries the keys of oaths replayed from the journal, and of a compaction after them, into the next start', async () => {
    const { dir, holders } = await grown();
    const store = await openEmbeddedStore({ dir, logger });
    await store.citizens.add(citizen({ name: 'Heron' }));
    await store.close();
    // The journal tail: computed at the start, then written with the rest by a compaction.
    const replayed = await seen(dir);
    expect(replayed.holders).toEqual(holders.map((h, i) => h ?? (probes[i] === 'heron' ? 'Heron' : null)));
    const compacting = await openEmbeddedStore({ dir, logger });
    await compacting.compact();
    await compacting.close();
    const read = await data(dir);
    expect(read.nameKeys).not.toBeNull();
    const after = await seen(dir);
    expect(after.nameKeys).toBe('read');
    expect(after.holders).toEqual(replayed.holders);
  });
});
