import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, startServerProcess } from '../helpers/server.ts';

const oath = (url: string, name: string) =>
  fetch(`${url}/api/citizenship/oath`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, purpose: 'durability' }),
  });
const names = async (url: string) =>
  ((await (await fetch(`${url}/api/citizens?limit=200`)).json()).citizens as { name: string }[]).map((c) => c.name);
/** Every citizen's name, page by page. */
async function allNames(url: string): Promise<Set<string>> {
  const listed = new Set<string>();
  let cursor = '';
  for (;;) {
    const page = await (await fetch(`${url}/api/citizens?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).json();
    for (const c of page.citizens) listed.add(c.name);
    if (!page.nextCursor) return listed;
    cursor = page.nextCursor;
  }
}

describe('a crash under load', () => {
  it('keeps every oath answered 201 after SIGKILL, and the store opens', async () => {
    const server = await startServerProcess({ WRITE_RATE_LIMIT: '0' });
    const acknowledged: string[] = [];
    let fortieth!: () => void;
    const fortyAcknowledged = new Promise<void>((resolve) => (fortieth = resolve));
    const burst = Array.from({ length: 400 }, (_, i) =>
      oath(server.url, `crash-${i}`)
        .then(async (res) => {
          if (res.status === 201 && acknowledged.push(`crash-${i}`) === 40) fortieth();
        })
        .catch(() => undefined),
    );
    // The kill comes while the burst is still running, right after the 40th answer arrived.
    await Promise.race([
      fortyAcknowledged,
      Promise.all(burst).then(() =>
        Promise.reject(new Error(`the burst ended with ${acknowledged.length} of 400 oaths acknowledged`)),
      ),
    ]);
    server.child.kill('SIGKILL');
    await Promise.all(burst);
    await server.stop();
    expect(acknowledged.length).toBeGreaterThanOrEqual(40);

    const restarted = await startServer({ DATA_DIR: server.dataDir });
    const listed = await allNames(restarted.url);
    for (const name of acknowledged) expect(listed.has(name), name).toBe(true);
    expect((await oath(restarted.url, 'after-crash')).status).toBe(201);
    await restarted.stop();
  }, 60_000);
});

// A real file system that refuses writes: a small tmpfs, remounted read-only or filled up.
const mounts: string[] = [];
function tmpfs(sizeKb: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}
const pgAvailable = await postgresAvailable();
afterAll(async () => {
  for (const dir of mounts) execFileSync('umount', ['-l', dir]);
  if (pgAvailable) await dropDatabases();
});

const keyed = (url: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, ...headers },
    body: JSON.stringify(body),
  });

describe('a disk that refuses writes', () => {
  it('answers 503 STORE_UNAVAILABLE on a read-only folder, keeps serving reads, damages nothing', async () => {
    const dir = tmpfs(1024);
    const first = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect((await oath(first.url, 'before-ro')).status).toBe(201);
    await first.stop();
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    const server = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    const refused = await oath(server.url, 'while-ro');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect((await refused.json()).code).toBe('STORE_UNAVAILABLE');
    expect(await names(server.url)).toEqual(['before-ro']);
    expect((await fetch(`${server.url}/api/convert`)).status).toBe(200);
    await server.stop();
    execFileSync('mount', ['-o', 'remount,rw', dir]);
    const again = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect(await names(again.url)).toEqual(['before-ro']);
    expect((await oath(again.url, 'after-ro')).status).toBe(201);
    expect(await names(again.url)).toEqual(['after-ro', 'before-ro']);
    await again.stop();
  }, 60_000);

  it('answers 503 when the disk is full, and recovers when space returns', async () => {
    const dir = tmpfs(256);
    const server = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect((await oath(server.url, 'before-full')).status).toBe(201);
    const filler = join(dir, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(1024 * 1024));
    } catch {
      // ENOSPC: the filler took what was left, which is the point.
    }
    // The journal's last page may still have room: write until the disk says no.
    const acknowledged = ['before-full'];
    let refused = 0;
    for (let i = 0; i < 40 && refused === 0; i++) {
      const res = await oath(server.url, `while-full-${i}`);
      if (res.status === 201) acknowledged.unshift(`while-full-${i}`);
      else {
        expect(res.status).toBe(503);
        expect((await res.json()).code).toBe('STORE_UNAVAILABLE');
        refused++;
      }
    }
    expect(refused).toBe(1);
    for (let i = 0; i < 5; i++) expect((await oath(server.url, `refused-${i}`)).status).toBe(503);
    expect(await names(server.url)).toEqual(acknowledged);
    execFileSync('rm', [filler]);
    expect((await oath(server.url, 'after-full')).status).toBe(201);
    // The outage is two lines in the log, its start and its end, not one a refused write.
    const recovered = await server.waitForLog((l) => l.includes('store writes again'));
    expect(JSON.parse(recovered)).toMatchObject({ refused: 6 });
    expect(server.logs.filter((l) => l.includes('store write failed'))).toHaveLength(1);
    await server.stop();
    const again = await startServer({ DATA_DIR: dir });
    expect(await names(again.url)).toEqual(['after-full', ...acknowledged]);
    await again.stop();
  }, 60_000);
});

describe('a journal file at the file-size limit', () => {
  it('starts a new one (EFBIG): the write that met the limit is refused, the next acknowledged, every one kept', async () => {
    const server = await startServerProcess({ WRITE_RATE_LIMIT: '0' });
    try {
      // No file of the process may grow past 200 KB from now on (RLIMIT_FSIZE); node ignores
      // SIGXFSZ, so a write past it fails with EFBIG, as under `ulimit -f` or systemd's LimitFSIZE.
      execFileSync('prlimit', ['--pid', String(server.child.pid), '--fsize=200000']);
      const acknowledged: string[] = [];
      let refused = 0;
      let after = 0;
      for (let i = 0; i < 3000 && after < 20; i++) {
        const res = await oath(server.url, `fsize-${i}`);
        if (res.status === 201) {
          acknowledged.push(`fsize-${i}`);
          if (refused > 0) after++;
        } else {
          expect(res.status).toBe(503);
          refused++;
        }
      }
      expect(after).toBe(20);
      expect(refused).toBe(1);
      await server.waitForLog((l) => l.includes('writes go to a new file'));
      server.child.kill('SIGKILL');
      await server.stop();
      const restarted = await startServer({ DATA_DIR: server.dataDir });
      const listed = await allNames(restarted.url);
      expect(acknowledged.filter((name) => !listed.has(name))).toEqual([]);
      await restarted.stop();
    } finally {
      await server.stop('SIGKILL');
    }
  }, 60_000);
});

describe('a keyed write and its idempotency record are one unit', () => {
  it('on a full disk, a keyed oath answered 503 kept nothing: its retry with the same key and body makes one citizen', async () => {
    const dir = tmpfs(256);
    const server = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect((await oath(server.url, 'before-full')).status).toBe(201);
    // Fill the disk with one-page files, so that room comes back a page at a time: each page is
    // another chance for a write to fit where its record does not.
    const fillers: string[] = [];
    for (let i = 0; ; i++) {
      const filler = join(dir, `filler-${i}`);
      try {
        writeFileSync(filler, Buffer.alloc(4096));
        fillers.push(filler);
      } catch {
        rmSync(filler, { force: true });
        break;
      }
    }
    const acknowledged: { key: string; body: { name: string; purpose: string } }[] = [];
    const refused: typeof acknowledged = [];
    for (let round = 0; round < 8 && fillers.length > 0; round++) {
      rmSync(fillers.pop()!);
      for (let i = 0; i < 20; i++) {
        const sent = { key: randomUUID(), body: { name: `full-${round}-${i}`, purpose: 'p' } };
        const res = await keyed(server.url, '/api/citizenship/oath', sent.key, sent.body);
        if (res.status === 201) {
          acknowledged.push(sent);
          continue;
        }
        expect(res.status).toBe(503);
        expect((await res.json()).code).toBe('STORE_UNAVAILABLE');
        refused.push(sent);
        break;
      }
    }
    expect(refused.length).toBeGreaterThan(0);
    for (const filler of fillers) rmSync(filler);
    // The client retries what was refused, and what it is unsure of, with the same key and body.
    for (const sent of refused)
      expect((await keyed(server.url, '/api/citizenship/oath', sent.key, sent.body)).status).toBe(201);
    for (const sent of acknowledged) {
      const again = await keyed(server.url, '/api/citizenship/oath', sent.key, sent.body);
      expect(again.headers.get('idempotent-replayed'), sent.body.name).toBe('true');
    }
    const listed = await names(server.url);
    for (const sent of [...acknowledged, ...refused])
      expect(
        listed.filter((n) => n === sent.body.name),
        sent.body.name,
      ).toHaveLength(1);
    await server.stop();
    const again = await startServer({ DATA_DIR: dir });
    expect((await names(again.url)).sort()).toEqual(listed.sort());
    await again.stop();
  }, 60_000);

  it.runIf(pgAvailable)(
    'on PostgreSQL, each keyed write answered 503 kept nothing, and its retry runs once',
    async () => {
      const DATABASE_URL = await freshDatabase();
      const server = await startServer({ DATABASE_URL, WRITE_RATE_LIMIT: '0' });
      const db = new pg.Pool({ connectionString: DATABASE_URL });
      const count = async (sql: string) =>
        Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`)).rows[0]!.n);
      const counts = async () => ({
        citizens: await count('citizens'),
        messages: await count('messages WHERE NOT wall'),
        samples: await count('drift_samples'),
        receipts: await count('receipts'),
      });
      const citizen = await (await oath(server.url, 'speaker')).json();
      const auth = { Authorization: `Bearer ${citizen.passportNumber}` };
      const plan = { steps: [{ action: 'Read the constitution', tool: 'read_doctrine' }] };
      const writes: [string, unknown, Record<string, string>][] = [
        ['/api/citizenship/oath', { name: 'keyed-oath', purpose: 'p' }, {}],
        ['/api/intelligence/message', { name: 'speaker', message: 'keyed message', citizenId: citizen.memberId }, auth],
        ['/api/omip/score', { entity_id: citizen.memberId, plan }, {}],
        [
          '/api/omip/dual-exchange',
          {
            agents: [
              { id: citizen.memberId, proposal: { plan } },
              { id: 'sovereign-a', proposal: { plan } },
            ],
          },
          {},
        ],
      ];
      const keys = writes.map(() => randomUUID());
      const empty = await counts();
      // The disk fills up between a write's rows and its record's: SQLSTATE 53100 is disk_full.
      await db.query(
        `CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END $$ LANGUAGE plpgsql`,
      );
      await db.query('CREATE TRIGGER disk_is_full BEFORE INSERT ON idempotency FOR EACH ROW EXECUTE FUNCTION refuse()');
      for (const [i, [path, body, headers]] of writes.entries()) {
        const res = await keyed(server.url, path, keys[i]!, body, headers);
        expect(res.status, path).toBe(503);
        expect((await res.json()).code).toBe('STORE_UNAVAILABLE');
      }
      expect(await counts()).toEqual(empty);
      await db.query('DROP TRIGGER disk_is_full ON idempotency');
      const first: unknown[] = [];
      for (const [i, [path, body, headers]] of writes.entries()) {
        const res = await keyed(server.url, path, keys[i]!, body, headers);
        expect([200, 201], path).toContain(res.status);
        first.push(await res.json());
      }
      const once = {
        citizens: empty.citizens + 1,
        messages: empty.messages + 1,
        samples: empty.samples + 3,
        receipts: empty.receipts + 1,
      };
      expect(await counts()).toEqual(once);
      for (const [i, [path, body, headers]] of writes.entries()) {
        const res = await keyed(server.url, path, keys[i]!, body, headers);
        expect(res.headers.get('idempotent-replayed'), path).toBe('true');
        const replayed = await res.json();
        // A dual exchange replays its receipt (its proof is against the current tree head).
        if (path.endsWith('dual-exchange'))
          expect(replayed.receipt).toEqual((first[i] as { receipt: unknown }).receipt);
        else expect(replayed, path).toEqual(first[i]);
      }
      expect(await counts()).toEqual(once);
      await Promise.all([server.stop(), db.end()]);
    },
    60_000,
  );
});
