import { chmod, open, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { CHECK_BYTES } from './checksum.ts';
import { citizenCodec, messageCodec, receiptCodec, type RecordCodec } from './codec.ts';
import type { ChunkOptions } from './durable-file.ts';
import { damageLine, openEmbeddedStore, type StoreDamage } from './embedded-store.ts';
import { Journal, type Damage } from './journal.ts';
import { entryFault } from './journal-entry.ts';
import { LEGACY_SNAPSHOT_FILE, SNAPSHOT_FILE, SnapshotFile } from './snapshot.ts';

/**
 * Reads every record of a data folder (a stopped store, or a backup) as a start would, checks each
 * one's checksum, and changes nothing: not even the torn tail a start would cut. What it found.
 */
export async function scrubStore(dir: string, chunks: ChunkOptions = {}): Promise<StoreDamage> {
  const file = new SnapshotFile(join(dir, SNAPSHOT_FILE), join(dir, LEGACY_SNAPSHOT_FILE), chunks);
  await file.read();
  const scan = await new Journal(dir, undefined, chunks).replay(() => undefined, { keep: true, check: entryFault });
  return { dir, damage: [...file.damage, ...scan.damage], torn: scan.torn };
}

export { damageLine };

/** What the damaged bytes held, as far as can be told: ids of members, messages and receipts. */
export interface DamageReport extends Damage {
  /** Where the damaged bytes were moved: `<file>.damaged`, at this offset in it. */
  movedTo: string;
  movedAt: number;
  memberIds: string[];
  messageIds: string[];
  receiptIds: string[];
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const idsAfter = (text: string, pattern: string) =>
  [...text.matchAll(new RegExp(pattern, 'g'))].map((m) => m[1]!).filter((id, i, all) => all.indexOf(id) === i);

/** Ids a snapshot block still holds readably, walking its records until one does not decode. */
function blockIds<T>(codec: RecordCodec<T>, base64: string): string[] {
  const buf = Buffer.from(base64, 'base64');
  const ids: string[] = [];
  try {
    for (let at = 0; at < buf.length;) {
      const end = codec.end(buf, at);
      if (end > buf.length || end <= at) break;
      ids.push(codec.idAt(buf, at));
      at = end;
    }
  } catch {
    // A record that does not decode ends what can be told.
  }
  return ids;
}

/** What can be told of damaged bytes: journal entries are JSON text; snapshot lines blocks of encodings. */
function describe(bytes: Buffer): Pick<DamageReport, 'memberIds' | 'messageIds' | 'receiptIds'> {
  const found = { memberIds: [] as string[], messageIds: [] as string[], receiptIds: [] as string[] };
  for (const line of bytes.toString('latin1').split('\n')) {
    const text = line.length > CHECK_BYTES && line[8] === ' ' ? line.slice(CHECK_BYTES) : line;
    const tag = text[0];
    if (tag && 'cmr'.includes(tag) && text[1] === '"') {
      const block = text.slice(2, text.endsWith('"') ? -1 : undefined);
      if (tag === 'c') found.memberIds.push(...blockIds(citizenCodec, block));
      if (tag === 'm') found.messageIds.push(...blockIds(messageCodec, block));
      if (tag === 'r') found.receiptIds.push(...blockIds(receiptCodec, block));
      continue;
    }
    found.memberIds.push(...idsAfter(text, `"memberId":"(${UUID})"`));
    found.messageIds.push(...idsAfter(text, `"op":"message\\.add","v":\\{"id":"(${UUID})"`));
    found.receiptIds.push(...idsAfter(text, `"op":"receipt\\.append","v":\\{"id":"([^"]+)"`));
  }
  const unique = (ids: string[]) => ids.filter((id, i) => ids.indexOf(id) === i);
  return {
    memberIds: unique(found.memberIds),
    messageIds: unique(found.messageIds),
    receiptIds: unique(found.receiptIds),
  };
}

/** Copies each damaged run of bytes to `<file>.damaged` beside its file, and says what it held. */
async function moveAside(found: StoreDamage): Promise<DamageReport[]> {
  const reports: DamageReport[] = [];
  for (const d of found.damage) {
    const handle = await open(d.file, 'r');
    let bytes: Buffer;
    try {
      bytes = Buffer.alloc(d.end - d.offset);
      await handle.read(bytes, 0, bytes.length, d.offset);
    } finally {
      await handle.close();
    }
    const movedTo = `${d.file}.damaged`;
    // The damaged bytes may hold passport hashes: 0600 as every file of DATA_DIR, whatever the
    // umask, and made so again if an earlier salvage left the file with wider bits.
    const out = await open(movedTo, 'a', 0o600);
    let movedAt: number;
    try {
      await out.chmod(0o600);
      movedAt = (await out.stat()).size;
      await out.writeFile(bytes);
    } finally {
      await out.close();
    }
    reports.push({ ...d, movedTo, movedAt, ...describe(bytes) });
  }
  return reports;
}

/** The report a salvage writes beside the store (and prints). */
export function reportText(dir: string, reports: DamageReport[], torn: StoreDamage['torn']): string {
  const lines = [
    `store-salvage of ${dir} at ${new Date().toISOString()}`,
    'ids are read from the damaged bytes as far as they decode: one the damage itself changed may be among them.',
  ];
  if (reports.length === 0) lines.push('no damaged records: the store was clean.');
  for (const r of reports) {
    lines.push(
      `${basename(r.file)} bytes ${r.offset}-${r.end} (${r.end - r.offset} bytes${r.reason ? `: ${r.reason}` : ''}; ${r.intactAfter} intact ${r.unit === 'entries' ? 'journal entries' : 'lines'} after them, kept): moved to ${basename(r.movedTo)} at byte ${r.movedAt}`,
      `  member ids seen in them: ${r.memberIds.join(' ') || 'none readable'}`,
      `  message ids seen in them: ${r.messageIds.join(' ') || 'none readable'}`,
      `  receipt ids seen in them: ${r.receiptIds.join(' ') || 'none readable'}`,
    );
  }
  if (torn) lines.push(`torn tail cut (never acknowledged): ${basename(torn.file)} bytes ${torn.offset}+${torn.bytes}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Salvages a stopped store: every intact record is read (past damage), the damaged bytes are copied
 * to `*.damaged` files beside their files and described in a report (`salvage-<time>.txt`), then
 * the store is written anew from what was read (a whole snapshot with checksums), which removes the
 * damaged journals and deltas. Afterwards the folder is scrubbed again: it must be clean.
 */
export async function salvageStore(
  dir: string,
  logger: Logger,
  chunks: ChunkOptions = {},
): Promise<{ reports: DamageReport[]; report: string; reportFile: string; after: StoreDamage }> {
  let reports: DamageReport[] = [];
  let torn: StoreDamage['torn'];
  const store = await openEmbeddedStore({
    dir,
    logger,
    chunks,
    salvage: async (found) => {
      reports = await moveAside(found);
      torn = found.torn;
    },
  });
  await store.compact();
  await store.close();
  const report = reportText(dir, reports, torn);
  const reportFile = join(dir, `salvage-${new Date().toISOString().replace(/[:.]/g, '-')}.txt`);
  // Ids of members and messages: 0600 as the store's own files.
  await writeFile(reportFile, report, { mode: 0o600 });
  await chmod(reportFile, 0o600);
  return { reports, report, reportFile, after: await scrubStore(dir, chunks) };
}
