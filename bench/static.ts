import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compare, load, startChild } from './lib.ts';

// GET /api/convert through the gateway against a bare node:http server with the same bytes.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);

const gateway = await startChild(['api/main.ts'], { PORT: '0', HOST: '127.0.0.1', DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-')) });
const bare = await startChild(['bench/bare-server.ts', 'dist/client/api/convert', 'application/json; charset=utf-8']);
try {
  const r = await compare(
    'static GET /api/convert',
    ROUNDS,
    () => load(`${gateway.url}/api/convert`, { seconds: SECONDS, pid: gateway.child.pid }),
    () => load(`${bare.url}/`, { seconds: SECONDS, pid: bare.child.pid }),
  );
  console.log(`target ratio >= 0.9: ${r.ratio >= 0.9 ? 'met' : 'NOT met'}`);
} finally {
  gateway.child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
}
