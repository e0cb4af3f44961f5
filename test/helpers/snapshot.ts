import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SNAPSHOT_FILE, SnapshotReader } from '../../api/store/snapshot.ts';

/** The order of the record lines after the header, as the store writes them. */
const SECTIONS = ['citizens', 'messages', 'idempotency', 'receipts', 'windows'] as const;
export interface SnapshotOnDisk {
  header: { seq: number; counts: Record<(typeof SECTIONS)[number], number>; telemetry: unknown };
  records: Record<(typeof SECTIONS)[number], unknown[]>;
  bytes: number;
}

/** A test data folder's snapshot (JSON Lines: a header, then each section's records), read as the store reads it, or null when there is none. */
export function snapshotOnDisk(dir: string): SnapshotOnDisk | null {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return null;
  const text = readFileSync(path, 'utf8');
  const reader = new SnapshotReader(path);
  text
    .split('\n')
    .filter((l) => l !== '')
    .forEach((line, i) => reader.line(line, i + 1));
  const data = reader.finish();
  const records = {
    citizens: [...data.citizens],
    messages: [...data.messages],
    idempotency: data.idempotency,
    receipts: [...data.receipts],
    windows: data.windows,
  };
  return { header: reader.header as SnapshotOnDisk['header'], records, bytes: Buffer.byteLength(text) };
}
