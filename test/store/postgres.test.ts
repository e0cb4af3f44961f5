import { afterAll, describe } from 'vitest';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { runStoreContract } from './contract.ts';

const available = await postgresAvailable();
afterAll(async () => {
  if (available) await dropDatabases();
});

describe.runIf(available)('PostgreSQL', () => {
  runStoreContract('postgresql', async () => {
    const url = await freshDatabase();
    return { store: await openPostgresStore(url), reopen: () => openPostgresStore(url) };
  });
});
