import pg from 'pg';
import { MIGRATIONS, migrate } from '../store/postgres/migrations.ts';

// npm run migrate: applies the PostgreSQL migrations to DATABASE_URL (the server also does at start).
const url = process.env.DATABASE_URL;
if (!url) {
  console.error('DATABASE_URL is not set (postgres://user@host:5432/db)');
  process.exit(2);
}
const pool = new pg.Pool({ connectionString: url });
try {
  const applied = await migrate(pool);
  console.log(applied.length ? `applied ${applied.join(', ')}` : `up to date at version ${MIGRATIONS.at(-1)!.version}`);
} finally {
  await pool.end();
}
