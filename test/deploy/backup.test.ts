import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { hashPassport, newPassport } from '../../api/citizenship/passport.ts';
import { newId } from '../../api/ids.ts';
import { openEmbeddedStore, type Store } from '../../api/store/index.ts';
import { MIGRATIONS } from '../../api/store/postgres/migrations.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const BACKUP = resolve('deploy/backup-embedded.sh');
const RESTORE = resolve('deploy/restore-embedded.sh');

interface Oath {
  memberId: string;
  passportNumber: string;
}

/** Runs a command to its end without blocking this process (the oath burst runs meanwhile). */
function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stderr }));
  });
}

const takeOath = async (url: string, name: string): Promise<{ status: number; oath?: Oath }> => {
  const res = await fetch(`${url}/api/citizenship/oath`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, purpose: 'a backup under load' }),
  });
  return res.status === 201 ? { status: 201, oath: (await res.json()) as Oath } : { status: res.status };
};

/** Oaths from `lanes` clients at once until `stop()`; what each acknowledged. */
function burst(url: string, lanes = 4) {
  const acknowledged: Oath[] = [];
  const statuses = new Map<number, number>();
  let stopped = false;
  const running = Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let i = 0; !stopped; i++) {
        const { status, oath } = await takeOath(url, `burst-${lane}-${i}`);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (oath) acknowledged.push(oath);
      }
    }),
  );
  return {
    acknowledged,
    statuses,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** Every citizen the server lists, page by page. */
async function listedIds(url: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor = '';
  for (;;) {
    const page = (await (await fetch(`${url}/api/citizens?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).json()) as {
      citizens: { memberId: string }[];
      nextCursor: string | null;
    };
    for (const c of page.citizens) ids.add(c.memberId);
    if (!page.nextCursor) return ids;
    cursor = page.nextCursor;
  }
}

/** A verified message: the passport still matches the restored citizen. */
async function speaks(url: string, oath: Oath): Promise<{ status: number; verified?: boolean }> {
  const res = await fetch(`${url}/api/intelligence/message`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${oath.passportNumber}` },
    body: JSON.stringify({ message: 'restored', citizenId: oath.memberId }),
  });
  const body = (await res.json()) as { message?: { verified: boolean } };
  return { status: res.status, verified: body.message?.verified };
}

const temp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

/** A citizen written straight into a store, as an oath writes it (the passport kept only hashed). */
async function enrol(store: Store, name: string): Promise<Oath> {
  const oath = { memberId: newId(), passportNumber: newPassport() };
  await store.citizens.add({
    memberId: oath.memberId,
    name,
    class: 'agent',
    purpose: 'already there',
    status: 'trillionaire',
    joinedAt: new Date().toISOString(),
    passportHash: hashPassport(oath.passportNumber),
  });
  return oath;
}

// The store compacts its journal into the snapshot once this many entries were written since the
// last snapshot (api/store/embedded/embedded-store.ts, compactEvery), counting those it replayed at start.
const COMPACT_EVERY = 20_000;

describe('backup and restore of the embedded store (deploy/backup-embedded.sh, deploy/restore-embedded.sh)', () => {
  it('a backup taken during an oath burst, while a compaction deletes the journals it is copying, restores every oath acknowledged before it began', async () => {
    // A store 10 writes short of a compaction: the burst below sets it off while the backup runs.
    const dir = temp('backup-live-');
    const prefill = await openEmbeddedStore({
      dir,
      logger: pino({ level: 'silent' }),
      compactEvery: Number.MAX_SAFE_INTEGER,
      compactBytes: Number.MAX_SAFE_INTEGER,
    });
    const before: Oath[] = [];
    for (let i = 0; i < COMPACT_EVERY - 10; i += 1000) {
      const chunk = Array.from({ length: Math.min(1000, COMPACT_EVERY - 10 - i) }, (_, j) =>
        enrol(prefill, `prefill-${i + j}`),
      );
      before.push(...(await Promise.all(chunk)));
    }
    await prefill.close();

    const server = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0', TELEMETRY_FLUSH_MS: '3600000' });
    let restored: TestServer | undefined;
    try {
      for (let i = 0; i < 3; i++) before.push((await takeOath(server.url, `before-${i}`)).oath!);

      // The backup's first journal read waits at a gate (a `sed` ahead of the real one on PATH)
      // until the compaction has deleted that journal: the order of its copies is what saves it.
      const gate = temp('backup-gate-');
      const bin = join(gate, 'bin');
      mkdirSync(bin);
      const sed = execFileSync('sh', ['-c', 'command -v sed'], { encoding: 'utf8' }).trim();
      writeFileSync(
        join(bin, 'sed'),
        `#!/bin/sh\ncase "$*" in *journal-*) if mkdir "${gate}/started" 2>/dev/null; then\n  i=0; while [ ! -e "${gate}/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\nfi ;; esac\nexec ${sed} "$@"\n`,
      );
      chmodSync(join(bin, 'sed'), 0o755);
      const archive = join(temp('backup-out-'), 'data.tar.gz');
      const backup = run(BACKUP, [dir, archive], { ...process.env, PATH: `${bin}:${process.env.PATH}` });
      await waitFor(() => existsSync(join(gate, 'started')), { what: 'the backup reaching its first journal' });

      const from = server.logs.length;
      const load = burst(server.url);
      await server.waitForLog((line) => line.includes('"msg":"store compacted"'), { from, timeoutMs: 20_000 });
      writeFileSync(join(gate, 'go'), '');
      const { code, stderr } = await backup;
      await load.stop();
      expect(code, stderr).toBe(0);
      // Both journals it listed were gone when it came to read them: the snapshot holds them.
      expect(stderr).toMatch(/2 journals compacted meanwhile/);
      expect(load.acknowledged.length).toBeGreaterThan(10);
      expect([...load.statuses.keys()]).toEqual([201]);
      expect(statSync(archive).mode & 0o777).toBe(0o600);
      await server.stop();

      const target = join(temp('backup-restore-'), 'data');
      const restore = await run(RESTORE, [archive, target]);
      expect(restore.code, restore.stderr).toBe(0);
      restored = await startServer({ DATA_DIR: target, WRITE_RATE_LIMIT: '0' });
      const ids = await listedIds(restored.url);
      const missing = before.filter((o) => !ids.has(o.memberId));
      expect(
        missing.length,
        `${missing.length} of ${before.length} oaths acknowledged before the backup are missing`,
      ).toBe(0);
      // Every listed citizen was acknowledged, by the prefill or the burst: nothing half-written appears.
      const written = new Set([...before, ...load.acknowledged].map((o) => o.memberId));
      expect([...ids].filter((id) => !written.has(id))).toEqual([]);
      for (const oath of [...before.slice(-3), before[0]!, before[9_999]!])
        expect(await speaks(restored.url, oath)).toEqual({ status: 201, verified: true });
    } finally {
      await server.stop();
      await restored?.stop();
    }
  }, 180_000);

  it('copies a journal only up to its last whole line, so a restored store keeps the writes it takes next', async () => {
    // Two acknowledged oaths, and a new journal whose first line was half-written when it was read.
    const dir = temp('backup-torn-');
    const store = await openEmbeddedStore({ dir, logger: pino({ level: 'silent' }) });
    const before = [await enrol(store, 'torn-a'), await enrol(store, 'torn-b')];
    await store.close();
    writeFileSync(
      join(dir, 'journal-000000000003.jsonl'),
      Buffer.concat([
        Buffer.from('{"seq":3,"op":"unit","v":[{"op":"citizen.add","v":{"memberId":'),
        Buffer.alloc(64 * 1024),
      ]),
    );

    const archive = join(temp('backup-out-'), 'torn.tar.gz');
    const backup = await run(BACKUP, [dir, archive]);
    expect(backup.code, backup.stderr).toBe(0);
    const target = join(temp('backup-restore-'), 'data');
    expect((await run(RESTORE, [archive, target])).code).toBe(0);
    const copied = {
      torn: readFileSync(join(target, 'journal-000000000003.jsonl'), 'utf8'),
      whole: readFileSync(join(target, 'journal-000000000001.jsonl'), 'utf8'),
    };

    // The server reopens journal-000000000003 (the next entry is 3) and appends to it: after a
    // half line, its first write would be glued to it and lost at the next start.
    let server = await startServer({ DATA_DIR: target });
    const after = (await takeOath(server.url, 'after-restore')).oath!;
    await server.stop();
    server = await startServer({ DATA_DIR: target });
    try {
      const ids = await listedIds(server.url);
      for (const oath of [...before, after]) {
        expect(ids.has(oath.memberId), oath.memberId).toBe(true);
        expect(await speaks(server.url, oath)).toEqual({ status: 201, verified: true });
      }
    } finally {
      await server.stop();
    }
    // The half line is gone and no zeros were copied; the whole lines are all there.
    expect(copied.torn).toBe('');
    expect(copied.whole.split('\n').filter(Boolean)).toHaveLength(2);
  }, 60_000);

  it('copies journals whose names passed 12 digits (sequences of 10^12 and more)', async () => {
    const dir = temp('backup-long-');
    const store = await openEmbeddedStore({ dir, logger: pino({ level: 'silent' }) });
    await enrol(store, 'long-a');
    await store.close();
    const long = 'journal-1000000000000.jsonl';
    writeFileSync(join(dir, long), readFileSync(join(dir, 'journal-000000000001.jsonl')));
    const archive = join(temp('backup-out-'), 'long.tar.gz');
    const backup = await run(BACKUP, [dir, archive]);
    expect(backup.code, backup.stderr).toBe(0);
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' });
    expect(listed).toContain(long);
    expect(listed).toContain('journal-000000000001.jsonl');
  });

  it('answers each documented exit code', async () => {
    const dir = temp('backup-codes-');
    const store = await openEmbeddedStore({ dir, logger: pino({ level: 'silent' }) });
    await enrol(store, 'codes');
    await store.close();
    const out = temp('backup-out-');
    const archive = join(out, 'a.tar.gz');

    expect((await run(BACKUP, [dir])).code).toBe(2);
    expect((await run(BACKUP, [temp('backup-empty-'), archive])).code).toBe(2);
    expect((await run(BACKUP, [dir, join(out, 'missing-folder', 'a.tar.gz')])).code).toBe(1);
    expect((await run(BACKUP, [dir, archive])).code).toBe(0);
    expect((await run(BACKUP, [dir, archive])).code).toBe(2);
    // Nothing is left beside the archive: the copies and the partial archive are removed.
    expect(readdirSync(out)).toEqual(['a.tar.gz']);

    expect((await run(RESTORE, [archive])).code).toBe(2);
    expect((await run(RESTORE, [join(out, 'none.tar.gz'), join(out, 'r1')])).code).toBe(2);
    expect((await run(RESTORE, [archive, dir])).code).toBe(2);
    writeFileSync(join(out, 'broken.tar.gz'), 'not an archive');
    expect((await run(RESTORE, [join(out, 'broken.tar.gz'), join(out, 'r2')])).code).toBe(1);
    expect(existsSync(join(out, 'r2'))).toBe(false);
    expect((await run(RESTORE, [archive, join(out, 'r3')])).code).toBe(0);
    expect(readdirSync(join(out, 'r3')).sort()).toEqual(readdirSync(dir).sort());
  }, 30_000);
});

const available = await postgresAvailable();
afterAll(async () => {
  if (available) await dropDatabases();
});

describe.runIf(available)('backup and restore of PostgreSQL (pg_dump -Fc, pg_restore)', () => {
  it('a dump taken during an oath burst restores every oath acknowledged before it began, on a server started on the restored database', async () => {
    const source = await freshDatabase();
    const server = await startServer({ DATABASE_URL: source, WRITE_RATE_LIMIT: '0' });
    let restored: TestServer | undefined;
    try {
      const before: Oath[] = [];
      for (let i = 0; i < 20; i++) before.push((await takeOath(server.url, `pg-before-${i}`)).oath!);

      const dump = join(temp('pg-dump-'), 'agent-node.dump');
      const load = burst(server.url);
      await waitFor(() => load.acknowledged.length >= 5, { what: 'the burst under way' });
      const dumped = await run('pg_dump', ['--format=custom', '--file', dump, source]);
      await load.stop();
      expect(dumped.code, dumped.stderr).toBe(0);
      expect([...load.statuses.keys()]).toEqual([201]);
      await server.stop();

      const target = await freshDatabase();
      const restore = await run('pg_restore', [
        '--no-owner',
        '--exit-on-error',
        '--single-transaction',
        '--dbname',
        target,
        dump,
      ]);
      expect(restore.code, restore.stderr).toBe(0);
      restored = await startServer({ DATABASE_URL: target, WRITE_RATE_LIMIT: '0' });
      const ids = await listedIds(restored.url);
      for (const oath of before) expect(ids.has(oath.memberId), oath.memberId).toBe(true);
      for (const oath of [before[0]!, before[19]!])
        expect(await speaks(restored.url, oath)).toEqual({ status: 201, verified: true });
      // The restored schema is current: the server's start found no migration to apply.
      const client = new pg.Client({ connectionString: target });
      await client.connect();
      const { rows } = await client.query<{ version: number }>('SELECT max(version) AS version FROM schema_migrations');
      await client.end();
      expect(rows[0]!.version).toBe(MIGRATIONS.at(-1)!.version);
    } finally {
      await server.stop();
      await restored?.stop();
    }
  }, 120_000);
});
