import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { lockFolder, LockHeld } from '../operator/host-lock.ts';
import { damageLine, salvageStore } from '../store/embedded/salvage.ts';

// npm run store-salvage -- DATA_DIR: keeps every intact record of a stopped embedded store, moves
// the damaged bytes to *.damaged files beside them, writes a report (salvage-<time>.txt), and
// leaves a store that starts. Exit 0 salvaged (or clean), 1 still damaged after, 2 not run.
const usage = 'usage: npm run store-salvage -- DATA_DIR (copy the folder first: the salvage rewrites it)';
const fail = (message: string, code: number): never => {
  process.stderr.write(`store-salvage: ${message}\n`);
  process.exit(code);
};
const arg = process.argv[2];
if (!arg || arg.startsWith('-')) fail(usage, 2);
const dir = resolve(arg!);
if (
  !(await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  ))
)
  fail(`${dir} is not a folder\n${usage}`, 2);
const lock = await lockFolder(dir, 'data', 'salvaging its records').catch((error: unknown) =>
  fail(error instanceof LockHeld ? `${error.message}: stop the service first` : String(error), 2),
);
const { report, reportFile, after } = await salvageStore(dir, pino({ level: 'warn' }, pino.destination(2)));
await lock.release();
process.stdout.write(report);
process.stdout.write(`report written to ${reportFile}\n`);
if (after.damage.length > 0) fail(`the store is still damaged after the salvage: ${damageLine(after)}`, 1);
process.stdout.write(`salvaged: ${dir} holds every intact record and starts\n`);
