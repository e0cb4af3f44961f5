import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** True when PostgreSQL answers; under CI=true a missing PostgreSQL is an error, never a skip. */
export async function postgresAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_ADMIN, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch (error) {
    if (process.env.CI === 'true')
      throw new Error(`PostgreSQL is required in CI and is not reachable at ${PG_ADMIN}: ${(error as Error).message}`);
    console.warn(
      `\n*** PostgreSQL is not reachable at ${PG_ADMIN}: the PostgreSQL tests are skipped. Start it (see README) to run them. ***\n`,
    );
    return false;
  }
}

const created: string[] = [];

/** A fresh, empty database; its URL. Dropped by dropDatabases(). */
export async function freshDatabase(): Promise<string> {
  const name = `agentnode_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  created.push(name);
  return PG_ADMIN.replace(/\/[^/]*$/, `/${name}`);
}

export async function dropDatabases(): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  await admin.connect();
  for (const name of created.splice(0)) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
