import { holdsEmbeddedStore, storeFolderArg } from './store-folder.ts';
import { lockFolder, LockHeld, type HostLock } from '../operator/host-lock.ts';
import { damageLine, scrubStore } from '../store/embedded/salvage.ts';

// npm run store-check -- DATA_DIR: reads every record of a stopped embedded store (or a backup of
// one) and checks its checksum; changes nothing. Exit 0 clean, 1 damaged, 2 not a store to check.
const usage = 'usage: npm run store-check -- DATA_DIR';
const { dir, fail } = await storeFolderArg('store-check', usage);
if (!(await holdsEmbeddedStore(dir))) fail(`${dir} holds no embedded store (no snapshot, no journal)\n${usage}`, 2);
// A live server writes and compacts as this reads: its journal's last line may be half written.
let lock: HostLock | undefined;
try {
  lock = await lockFolder(dir, 'data', 'checking its records');
} catch (error) {
  if (error instanceof LockHeld) fail(`${error.message}: check a stopped store, or a backup of it`, 2);
  // A backup on read-only media takes no lock, and needs none.
}
const found = await scrubStore(dir);
await lock?.release();
if (found.torn)
  process.stdout.write(
    `note: ${found.torn.file} ends in a torn tail of ${found.torn.bytes} bytes at byte ${found.torn.offset} (a write never acknowledged; a start cuts it)\n`,
  );
if (found.damage.length === 0) {
  process.stdout.write(`clean: every record in ${dir} holds its checksum\n`);
  process.exit(0);
}
for (const d of found.damage)
  process.stdout.write(
    `damaged: ${d.file} bytes ${d.offset}-${d.end} (${d.reason ? `${d.reason}; ` : ''}${d.intactAfter} intact ${d.unit === 'entries' ? 'journal entries' : 'lines'} after them)\n`,
  );
process.stdout.write(`${damageLine(found)}\n`);
process.exit(1);
