import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { citizenCodec, messageCodec, receiptCodec, type RecordCodec } from '../../api/store/records.ts';
import { SNAPSHOT_FILE } from '../../api/store/snapshot.ts';

/** Sections written in the store's compact encoding (a base64 JSON string a line), and their codecs. */
const ENCODED: Record<string, RecordCodec<unknown>> = {
  citizens: citizenCodec,
  messages: messageCodec,
  receipts: receiptCodec,
} as never;

/** The order of the record lines after the header, as the store writes them. */
const SECTIONS = ['citizens', 'messages', 'idempotency', 'receipts', 'windows'] as const;
export interface SnapshotOnDisk {
  header: { seq: number; counts: Record<(typeof SECTIONS)[number], number>; telemetry: unknown };
  records: Record<(typeof SECTIONS)[number], unknown[]>;
  bytes: number;
}

/** A test data folder's snapshot (JSON Lines: a header, then each section's records), or null when there is none. */
export function snapshotOnDisk(dir: string): SnapshotOnDisk | null {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return null;
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n').filter((l) => l !== '');
  const header = JSON.parse(lines[0]!) as SnapshotOnDisk['header'];
  const records = {} as SnapshotOnDisk['records'];
  let at = 1;
  for (const section of SECTIONS) {
    const codec = ENCODED[section];
    records[section] = lines
      .slice(at, at + header.counts[section])
      .map((l) =>
        codec ? codec.decode(Buffer.from(JSON.parse(l) as string, 'base64'), 0) : (JSON.parse(l) as unknown),
      );
    at += header.counts[section];
  }
  return { header, records, bytes: Buffer.byteLength(text) };
}
