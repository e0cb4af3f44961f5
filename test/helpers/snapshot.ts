import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHECK_BYTES, carriesChecksum, checksumHolds } from '../../api/store/embedded/checksum.ts';
import { SNAPSHOT_FILE, SnapshotReader } from '../../api/store/embedded/snapshot.ts';

/** The order of the record lines after the header, as the store writes them. */
const SECTIONS = ['citizens', 'messages', 'idempotency', 'receipts', 'windows'] as const;
export interface SnapshotOnDisk {
  header: { seq: number; counts: Record<(typeof SECTIONS)[number], number>; telemetry: unknown };
  records: Record<(typeof SECTIONS)[number], unknown[]>;
  bytes: number;
}

/**
 * A test data folder's snapshot and its deltas (JSON Lines: a header, then each section's records),
 * read as the store reads them, or null when there is none. The header is the last file's, its
 * counts those of all the records; the bytes are those of every file.
 */
export function snapshotOnDisk(dir: string): SnapshotOnDisk | null {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return null;
  const deltas = readdirSync(dir)
    .filter((f) => /^snapshot-\d+\.jsonl$/.test(f))
    .sort();
  let reader: SnapshotReader | undefined;
  let bytes = 0;
  for (const file of [SNAPSHOT_FILE, ...deltas]) {
    bytes += readFileSync(join(dir, file)).length;
    const into = reader?.finish();
    // A delta the snapshot already covers (left by a crash) is skipped, as the store skips it.
    if (into && Number(/\d+/.exec(file)![0]) <= into.seq) continue;
    reader = new SnapshotReader(join(dir, file), into);
    const content = readFileSync(join(dir, file));
    for (let offset = 0, lineNo = 1; offset < content.length; lineNo++) {
      const nl = content.indexOf(10, offset);
      const end = nl === -1 ? content.length : nl + 1;
      const line = content.subarray(offset, nl === -1 ? end : nl);
      const checked = carriesChecksum(line);
      const text = !checked ? line.toString() : checksumHolds(line) ? line.toString('utf8', CHECK_BYTES) : undefined;
      reader.read({ text, offset, end, lineNo, checked, last: nl === -1 });
      offset = end;
    }
  }
  const data = reader!.finish();
  const records = {
    citizens: [...data.citizens],
    messages: [...data.messages],
    idempotency: data.idempotency,
    receipts: [...data.receipts],
    windows: data.windows,
  };
  const counts = Object.fromEntries(SECTIONS.map((s) => [s, records[s].length])) as SnapshotOnDisk['header']['counts'];
  return { header: { ...(reader!.header as SnapshotOnDisk['header']), counts }, records, bytes };
}
