import { unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';
import type { Message } from '../schemas/citizenship.ts';
import {
  readJSONMembers,
  readLines,
  syncDir,
  writeLinesDurably,
  type ChunkOptions,
  type ChunkStats,
} from './durable-file.ts';
import { citizenCodec, messageCodec, receiptCodec, RecordList, type EncodedRecords } from './records.ts';
import type { CitizenRecord, DriftSample, IdempotencyRecord, ReceiptEntry } from './types.ts';

export interface Drift {
  samples: number;
  contraction_count: number;
  fail_closed: number;
  by_verdict: Record<string, number>;
  recent: DriftSample[];
}
export const emptyDrift = (): Drift => ({
  samples: 0,
  contraction_count: 0,
  fail_closed: 0,
  by_verdict: {},
  recent: [],
});

/** A list a snapshot writes a record a line: its length is known before its records are. */
export type Sized<T> = Iterable<T> & { readonly length: number };

/** Everything the embedded store holds, as a snapshot writes and reads it. */
export interface SnapshotData {
  seq: number;
  drift: Drift;
  telemetry: object | null;
  citizens: EncodedRecords<CitizenRecord>;
  messages: EncodedRecords<Message>;
  idempotency: Sized<IdempotencyRecord>;
  receipts: EncodedRecords<ReceiptEntry>;
  /** Drift windows, as [entityId, deltas]. */
  windows: Sized<[string, number[]]>;
}

/** What a read gives back: the long lists already in their compact in-memory form. */
export interface LoadedData extends SnapshotData {
  citizens: RecordList<CitizenRecord>;
  messages: RecordList<Message>;
  receipts: RecordList<ReceiptEntry>;
  idempotency: IdempotencyRecord[];
  windows: [string, number[]][];
}

export const emptyData = (): LoadedData => ({
  seq: 0,
  drift: emptyDrift(),
  telemetry: null,
  citizens: new RecordList(citizenCodec),
  messages: new RecordList(messageCodec),
  idempotency: [],
  receipts: new RecordList(receiptCodec),
  windows: [],
});

const FORMAT = 'agentnode-embedded-snapshot';
const VERSION = 2;
/** The order of the record lines after the header. */
const SECTIONS = ['citizens', 'messages', 'idempotency', 'receipts', 'windows'] as const;
type Section = (typeof SECTIONS)[number];
/**
 * Sections whose lines are the in-memory encoding of a record as a JSON string of base64 (see
 * records.ts): a start copies them into memory without parsing a JSON object per record, which
 * took most of the time of a start. The others are a JSON value a line.
 */
const ENCODED = new Set<Section>(['citizens', 'messages', 'receipts']);
const isEncoded = (section: Section): section is 'citizens' | 'messages' | 'receipts' => ENCODED.has(section);
interface Header {
  format: typeof FORMAT;
  version: number;
  seq: number;
  counts: Record<Section, number>;
  drift: Drift;
  telemetry: object | null;
}

/** The snapshot as lines: a header (sequence, counts, the small values), then a record a line. */
export function* snapshotLines(data: SnapshotData): Generator<string> {
  const counts = Object.fromEntries(SECTIONS.map((s) => [s, data[s].length])) as Record<Section, number>;
  const header: Header = {
    format: FORMAT,
    version: VERSION,
    seq: data.seq,
    counts,
    drift: data.drift,
    telemetry: data.telemetry,
  };
  yield JSON.stringify(header);
  for (const section of SECTIONS) {
    let n = 0;
    for (const line of isEncoded(section) ? quoted(data[section].encoded()) : jsonLines(data[section])) {
      yield line;
      n++;
    }
    // A list that moved while it was written would leave the header's count wrong: never silently.
    if (n !== counts[section])
      throw new Error(`snapshot: ${section} changed while written (${n} of ${counts[section]})`);
  }
}

function* jsonLines(records: Iterable<unknown>): Generator<string> {
  for (const record of records) yield JSON.stringify(record);
}
function* quoted(lines: Iterable<string>): Generator<string> {
  for (const line of lines) yield `"${line}"`;
}

/** Puts one record into the loaded data. */
function take(data: LoadedData, section: Section, value: unknown): void {
  switch (section) {
    case 'citizens':
      data.citizens.insert(value as CitizenRecord, true);
      return;
    case 'messages':
      data.messages.insert(value as Message, false);
      return;
    case 'idempotency':
      data.idempotency.push(value as IdempotencyRecord);
      return;
    case 'receipts':
      data.receipts.push(value as ReceiptEntry);
      return;
    case 'windows':
      data.windows.push(value as [string, number[]]);
      return;
  }
}

/**
 * lowdb's adapter for the embedded store's snapshot, streaming: JSON Lines (`snapshot.jsonl`), a
 * header then a record a line (citizens, messages and receipts in their in-memory encoding, as
 * base64 strings), read and written a chunk at a time; written durably (temp file,
 * fsync, rename, fsync of the folder; lowdb's own JSONFile renames but never fsyncs, and reads and
 * writes the whole file as one string). A snapshot of the old format (`snapshot.json`, one JSON
 * object) is read a member at a time too, and removed once a new one is written.
 */
export class SnapshotFile implements Adapter<SnapshotData> {
  readonly path: string;
  readonly legacyPath: string;
  readonly #options: ChunkOptions;
  /** What the last read and the last write moved, in how many chunks. */
  lastRead: ChunkStats | undefined;
  lastWrite: ChunkStats | undefined;
  /** The last read came from a snapshot of the old format, which the next write replaces. */
  readLegacy = false;

  constructor(path: string, legacyPath: string, options: ChunkOptions = {}) {
    this.path = path;
    this.legacyPath = legacyPath;
    this.#options = options;
  }

  async read(): Promise<LoadedData | null> {
    try {
      const data = await this.#readLines();
      this.readLegacy = false;
      return data;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    try {
      const data = await this.#readLegacy();
      this.readLegacy = true;
      return data;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async write(data: SnapshotData): Promise<void> {
    this.lastWrite = await writeLinesDurably(this.path, snapshotLines(data), this.#options);
    // An old-format snapshot is left only by a start that read it (or a crash just after this write).
    await unlink(this.legacyPath).then(
      () => syncDir(dirname(this.path)),
      () => undefined,
    );
    this.readLegacy = false;
  }

  async #readLines(): Promise<LoadedData> {
    const data = emptyData();
    let header: Header | undefined;
    let section = 0;
    let left = 0;
    this.lastRead = await readLines(
      this.path,
      (line, lineNo) => {
        if (!header) {
          header = JSON.parse(line) as Header;
          if (header.format !== FORMAT || header.version !== VERSION)
            throw new Error(`${this.path}: not a snapshot this version reads`);
          data.seq = header.seq;
          data.drift = { ...emptyDrift(), ...header.drift };
          data.telemetry = header.telemetry ?? null;
          left = header.counts[SECTIONS[0]];
          return;
        }
        while (left === 0 && section < SECTIONS.length - 1) left = header.counts[SECTIONS[++section]!];
        if (left === 0) throw new Error(`${this.path}: line ${lineNo} is past the records the header counts`);
        const name = SECTIONS[section]!;
        // An encoded line is a JSON string whose text needs no unescaping: base64 between quotes.
        if (isEncoded(name)) {
          if (line.charCodeAt(0) !== 0x22 || line.charCodeAt(line.length - 1) !== 0x22)
            throw new Error(`${this.path}: line ${lineNo} is not an encoded record`);
          data[name].pushEncoded(line.slice(1, -1));
        } else take(data, name, JSON.parse(line));
        left--;
      },
      this.#options,
    );
    if (!header) throw new Error(`${this.path}: empty snapshot`);
    while (left === 0 && section < SECTIONS.length - 1) left = header.counts[SECTIONS[++section]!];
    if (left !== 0) throw new Error(`${this.path}: the snapshot ends before the records its header counts`);
    return data;
  }

  /** The old format: `{"seq":..,"citizens":[..],"messages":[..],..}`, a member or element at a time. */
  async #readLegacy(): Promise<LoadedData> {
    const data = emptyData();
    this.lastRead = await readJSONMembers(
      this.legacyPath,
      new Set(SECTIONS),
      (key, value) => {
        if ((SECTIONS as readonly string[]).includes(key)) take(data, key as Section, value);
        else if (key === 'seq') data.seq = value as number;
        else if (key === 'drift') data.drift = { ...emptyDrift(), ...(value as Drift) };
        else if (key === 'telemetry') data.telemetry = (value as object | null) ?? null;
      },
      this.#options,
    );
    return data;
  }
}

/** Every record a data folder's snapshot holds, read the way the store reads it (tests and tools). */
export async function readSnapshot(dir: string, options: ChunkOptions = {}): Promise<LoadedData | null> {
  return new SnapshotFile(`${dir}/${SNAPSHOT_FILE}`, `${dir}/${LEGACY_SNAPSHOT_FILE}`, options).read();
}
export const SNAPSHOT_FILE = 'snapshot.jsonl';
export const LEGACY_SNAPSHOT_FILE = 'snapshot.json';
