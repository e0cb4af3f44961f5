import { loadPostgresConfig } from '../config.ts';
import { StartupError } from '../startup-error.ts';
import { MIGRATIONS } from '../store/postgres/migrations.ts';
import { POSTGRES_DEFAULTS, isConnectionLoss, isNotNow, reasonOf } from '../store/postgres/pool.ts';
import { migrateOnce, postgresRefusal } from '../store/postgres/postgres-store.ts';
import { StoreUnavailableError } from '../store/errors.ts';

// npm run migrate: applies the PostgreSQL migrations to DATABASE_URL (the server also does at start),
// connecting as the server does: a connection within PG_CONNECT_TIMEOUT_MS and a first SELECT 1
// within PG_QUERY_TIMEOUT_MS, so a database that does not answer ends it. The migrations themselves
// have no statement timeout, as at start: a large table's may take long.
const fail = (message: string, status: number): never => {
  process.stderr.write(`npm run migrate: ${message}\n`);
  process.exit(status);
};

let config: ReturnType<typeof loadPostgresConfig>;
try {
  config = loadPostgresConfig();
} catch (error) {
  if (!(error instanceof StartupError)) throw error;
  fail(error.message, 2);
}
const url = config!.DATABASE_URL;
if (!url) fail('DATABASE_URL is not set (postgres://user@host:5432/db)', 2);

/** host:port of the URL, never its password. */
const where = (() => {
  try {
    return new URL(url!).host || 'the local socket';
  } catch {
    return 'DATABASE_URL';
  }
})();

try {
  const applied = await migrateOnce(url!, {
    ...POSTGRES_DEFAULTS,
    poolSize: config!.PG_POOL_SIZE,
    connectTimeoutMs: config!.PG_CONNECT_TIMEOUT_MS,
    queryTimeoutMs: config!.PG_QUERY_TIMEOUT_MS,
    idleTimeoutMs: config!.PG_IDLE_TIMEOUT_MS,
  });
  console.log(applied.length ? `applied ${applied.join(', ')}` : `up to date at version ${MIGRATIONS.at(-1)!.version}`);
} catch (error) {
  const refusal = postgresRefusal(error);
  if (refusal) fail(refusal.message, 1);
  if (error instanceof StoreUnavailableError || isConnectionLoss(error) || isNotNow(error))
    fail(
      `PostgreSQL at ${where} does not answer (${reasonOf(error)}; PG_CONNECT_TIMEOUT_MS=${config!.PG_CONNECT_TIMEOUT_MS}, PG_QUERY_TIMEOUT_MS=${config!.PG_QUERY_TIMEOUT_MS}): start it or fix DATABASE_URL, then run again`,
      1,
    );
  throw error;
}
