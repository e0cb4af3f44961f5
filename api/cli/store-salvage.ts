import { pino } from 'pino';
import { holdsEmbeddedStore, storeFolderArg } from './store-folder.ts';
import { lockFolder, LockHeld } from '../operator/host-lock.ts';
import { damageLine, salvageStore } from '../store/embedded/salvage.ts';

// npm run store-salvage -- DATA_DIR: keeps every intact record of a stopped embedded store, moves
// the damaged bytes to *.damaged files beside them, writes a report (salvage-<time>.txt), and
// leaves a store that starts. Exit 0 salvaged (or clean), 1 still damaged after, 2 not run.
const usage = 'usage: npm run store-salvage -- DATA_DIR (copy the folder first: the salvage rewrites it)';
const { dir, fail } = await storeFolderArg('store-salvage', usage);
// A salvage writes a store into the folder and makes it 0700: never into a folder that holds none.
if (!(await holdsEmbeddedStore(dir))) fail(`${dir} holds no embedded store (no snapshot, no journal)\n${usage}`, 2);
const lock = await lockFolder(dir, 'data', 'salvaging its records').catch((error: unknown) =>
  fail(error instanceof LockHeld ? `${error.message}: stop the service first` : String(error), 2),
);
const { report, reportFile, after } = await salvageStore(dir, pino({ level: 'warn' }, pino.destination(2)));
await lock.release();
process.stdout.write(report);
process.stdout.write(`report written to ${reportFile}\n`);
if (after.damage.length > 0) fail(`the store is still damaged after the salvage: ${damageLine(after)}`, 1);
process.stdout.write(`salvaged: ${dir} holds every intact record and starts\n`);
