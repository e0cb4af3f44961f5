import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../config.ts';
import { openLogSigner, verifyTreeHead, type LogSigner } from '../omip/signer.ts';
import { verifyLogInOrder } from '../omip/verify.ts';
import { lockFolder, LockHeld } from '../operator/host-lock.ts';
import { holdingsOf, openEmbeddedStore } from '../store/embedded/embedded-store.ts';
import { migrate } from '../store/postgres/migrations.ts';
import { checkMove, receiptsInOrder } from '../store/postgres/move-check.ts';
import { copyStore, finishMove, MoveRefused, refuseDamagedSource, startMove } from '../store/postgres/move.ts';
import { openPostgresStore } from '../store/postgres/postgres-store.ts';
import { StartupError } from '../startup-error.ts';

// npm run move-to-postgres -- --from DATA_DIR, with DATABASE_URL: moves a stopped embedded store
// (citizens, feed, receipts, drift, idempotency records, bot ledger) into a fresh PostgreSQL database.
const USAGE =
  'usage: DATABASE_URL=postgres://... npm run move-to-postgres -- [--from DATA_DIR] [--key-out FILE] [--batch N]';
const MOVE_LOCK = 7243003;
const KEY_FILE = 'omip-log-ed25519.pem';

const fail = (message: string, code = 1): never => {
  process.stderr.write(`move-to-postgres: ${message}\n`);
  process.exit(code);
};
const say = (line: string) => process.stdout.write(`${line}\n`);

let args;
try {
  args = parseArgs({
    options: { from: { type: 'string' }, 'key-out': { type: 'string' }, batch: { type: 'string', default: '2000' } },
  }).values;
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`, 2);
}
const config = (() => {
  try {
    return loadConfig();
  } catch (error) {
    return fail(error instanceof StartupError ? error.message : String(error), 2);
  }
})();
const batch = Number(args!.batch);
if (!Number.isInteger(batch) || batch < 1 || batch > 50_000) fail(`--batch takes 1 to 50000 rows\n${USAGE}`, 2);
if (!config.DATABASE_URL) fail(`DATABASE_URL is not set\n${USAGE}`, 2);
const url = config.DATABASE_URL!;
const dir = resolve(args!.from ?? config.DATA_DIR);
if (
  dir === resolve(':memory:') ||
  !(await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  ))
)
  fail(`${dir} is not a folder: --from names the embedded store's DATA_DIR`, 2);

// The folder's own lock, as a server takes it: no move while a server serves it, no server while it moves.
const lock = await lockFolder(dir, 'data', 'moving it to PostgreSQL').catch((error: unknown) =>
  fail(
    error instanceof LockHeld
      ? `${error.message}. Stop the service on this DATA_DIR, then run the move again.`
      : String(error),
  ),
);
// Every record's checksum, before anything is copied: a damaged store is named and not moved.
await refuseDamagedSource(dir).catch((error: unknown) =>
  fail(error instanceof MoveRefused ? error.message : String(error)),
);

// The key that signed the log's tree heads: the service's LOG_SIGNING_KEY_FILE, or the one its folder made.
const keyPath =
  config.LOG_SIGNING_KEY_FILE ??
  (await stat(join(dir, KEY_FILE)).then(
    () => join(dir, KEY_FILE),
    () => undefined,
  ));
const signer: LogSigner | null = keyPath
  ? await openLogSigner(null, keyPath).catch((error: Error) =>
      fail(`cannot read the log key ${keyPath}: ${error.message}`),
    )
  : null;
const keyOut = args!['key-out'] ? resolve(args!['key-out']) : undefined;
if (keyOut) {
  if (!keyPath) fail('--key-out: this store has no log key to write out');
  const existing = await readFile(keyOut, 'utf8').catch(() => null);
  if (existing !== null && existing !== (await readFile(keyPath!, 'utf8')))
    fail(`--key-out: ${keyOut} exists and holds another key`);
  // A secret: readable by its owner only, from the moment it exists.
  if (existing === null) await writeFile(keyOut, await readFile(keyPath!), { mode: 0o600, flag: 'wx' });
}
// The store is named by its log key (the same wherever its folder is), or by its folder.
const sourceId = createHash('sha256')
  .update(signer?.publicKeyPem ?? realpathSync(dir))
  .digest('hex')
  .slice(0, 32);

const pool = new pg.Pool({ connectionString: url, max: 3 });
const guard = await pool.connect().catch((error: Error) => fail(`cannot connect to DATABASE_URL: ${error.message}`));
try {
  await migrate(pool);
  if (!(await guard.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MOVE_LOCK])).rows[0]!.ok)
    fail('another move into this database is running');
  const move = await startMove(guard, sourceId).catch((error: unknown) =>
    fail(error instanceof MoveRefused ? error.message : String(error)),
  );
  if (move.state === 'finished') {
    say(
      `already moved on ${move.finishedAt.toISOString()}: nothing to do (the PostgreSQL service may have taken writes since).`,
    );
  } else {
    say(move.state === 'new' ? `moving ${dir} into PostgreSQL` : `resuming the move of ${dir}`);
    const source = await openEmbeddedStore({ dir, logger: pino({ level: 'warn' }, pino.destination(2)) });
    const holdings = holdingsOf(source);
    const phase = (name: string) => {
      const at = performance.now();
      say(`phase ${name}`);
      return () => say(`phase ${name} done in ${((performance.now() - at) / 1000).toFixed(1)} s`);
    };
    const copied = phase('1/3: copy');
    await copyStore({ source, holdings, sourceId, pool, progress: move.progress, batch, report: say });
    copied();
    // Steps a migration runs over rows already there (such as keying rows written without a key) run now on the copy, not at the service's first start.
    const keyed = phase('2/3: name keys');
    await migrate(pool);
    keyed();
    const target = await openPostgresStore(url);
    const checked = phase('3/3: check');
    const problems = await checkMove({ source, holdings, target, pool, batch, report: say });
    await Promise.all([source.close(), target.close()]);
    // verify-receipts' checks, on the log as PostgreSQL holds it; and the key signs a head its public key verifies.
    const log = await verifyLogInOrder(receiptsInOrder(pool, batch));
    problems.push(...log.problems);
    const head = signer?.signHead({ tree_size: log.size, root_hash: log.root, timestamp: new Date().toISOString() });
    if (head && !verifyTreeHead(head, signer!.publicKeyPem))
      problems.push('a tree head signed with the log key does not verify with its public key');
    checked();
    if (problems.length > 0) {
      for (const p of problems.slice(0, 20)) process.stderr.write(`FAIL ${p}\n`);
      fail(
        `the copy differs from the embedded store in ${problems.length} places; nothing was marked done. Run the move again (it resumes), or move into a fresh database.`,
      );
    }
    await finishMove(guard, sourceId);
    say(
      `OK receipt log: ${log.size} receipts, root ${log.size > 0 ? log.root : '(empty)'}${head ? ', a tree head signed with its key verifies' : ''}`,
    );
  }
  say(
    keyPath
      ? `The receipt log is signed with ${keyOut ?? keyPath}: start every PostgreSQL process with LOG_SIGNING_KEY_FILE=${keyOut ?? keyPath}, so its tree heads verify with the same public key as before.`
      : 'This store had no log key: the PostgreSQL service signs with the key of LOG_SIGNING_KEY_FILE (give every process the same one).',
  );
} catch (error) {
  // A lost connection or a full disk mid-move: what was committed stays, and the next run resumes there.
  fail(`stopped: ${(error as Error).message}. Run the move again to resume.`);
} finally {
  guard.release();
  await pool.end();
  await lock.release();
}
