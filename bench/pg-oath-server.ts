import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

// The conventional choice, as a baseline: a plain node:http oath endpoint inserting into
// PostgreSQL with synchronous commit (the default).
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
await pool.query(
  'CREATE TABLE IF NOT EXISTS citizens (member_id uuid PRIMARY KEY, name text NOT NULL, class text NOT NULL, purpose text NOT NULL, passport_hash text NOT NULL, joined_at timestamptz NOT NULL)',
);

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        name: string;
        purpose: string;
        class?: string;
      };
      const passport = randomBytes(32).toString('base64url');
      const id = randomUUID();
      await pool.query('INSERT INTO citizens VALUES ($1, $2, $3, $4, $5, now())', [
        id,
        body.name,
        body.class ?? 'agent',
        body.purpose,
        createHash('sha256').update(passport).digest('hex'),
      ]);
      const out = JSON.stringify({ ok: true, memberId: id, passportNumber: passport });
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(out) }).end(out);
    } catch {
      res.writeHead(400).end();
    }
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
