import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
    const text = readFileSync(join(dir, file), 'utf8');
    bytes += Buffer.byteLength(text);
    const into = reader?.finish();
    // A delta the snapshot already covers (left by a crash) is skipped, as the store skips it.
    if (into && Number(/\d+/.exec(file)![0]) <= into.seq) continue;
    reader = new SnapshotReader(join(dir, file), into);
    text
      .split('\n')
      .filter((l) => l !== '')
      .forEach((line, i) => reader!.line(line, i + 1));
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
