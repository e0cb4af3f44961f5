import { readdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Adapter } from 'lowdb';
import type { Message } from '../../schemas/citizenship.ts';
import {
  MAX_STRING_BYTES,
  readJSONMembers,
  readRecordLines,
  syncDir,
  writeLinesDurably,
  type ChunkOptions,
  type ChunkStats,
  type LineRead,
  StringLimitError,
} from './durable-file.ts';
import { JOURNAL_NAME, journalFiles, type Damage } from './journal.ts';
import { citizenCodec, messageCodec, receiptCodec, RecordList, type EncodedRecords } from './codec.ts';
import type { WindowLine } from './drift-windows.ts';
import type { CitizenRecord, DriftSample, IdempotencyRecord, ReceiptEntry } from '../types.ts';

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
  /**
   * Drift windows, as [entityId, deltas, movedAt ms], least recently moved first (a read keeps that
   * order); in a delta, one with no deltas is a window no longer held.
   */
  windows: Sized<WindowLine>;
  /**
   * What the two words each citizen carries are (the store's stamp for its name-key hashes), or
   * null: a snapshot writes the words only with it, and gives it back so a reader can tell whether
   * they are still what it would compute.
   */
  nameKeys: string | null;
  /**
   * For a delta: the sequence of the snapshot (or delta) it follows. A delta holds only what was
   * written since then: the records added, the idempotency records and drift windows written (the
   * latest of each), and the small values (drift, telemetry) whole.
   */
  from?: number;
}

/** What a read gives back: the long lists already in their compact in-memory form. */
export interface LoadedData extends SnapshotData {
  citizens: RecordList<CitizenRecord>;
  messages: RecordList<Message>;
  receipts: RecordList<ReceiptEntry>;
  idempotency: IdempotencyRecord[];
  windows: WindowLine[];
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
  nameKeys: null,
});

const FORMAT = 'agentnode-embedded-snapshot';
/**
 * 4: every line behind the CRC-32C of its bytes (checksum.ts), then a letter naming its section
 * (TAGS: a reader that must step over a damaged line still knows what each intact one holds), then
 * what version 3 wrote. 3 (still read, and written anew once): records in blocks (a line holds the
 * encodings of as many whole records as fit in BLOCK_BYTES), the citizens' name-key hashes, and
 * deltas. 2 (still read): a record a line, no hashes.
 */
const VERSION = 4;
/** The order of the record lines after the header (the citizens' words before them, so a delta's citizens go in with theirs). */
const SECTIONS = ['nameKeys', 'citizens', 'messages', 'idempotency', 'receipts', 'windows'] as const;
const SECTIONS_V2 = ['citizens', 'messages', 'idempotency', 'receipts', 'windows'] as const;
type Section = (typeof SECTIONS)[number];
const TAG_OF: Record<Section | 'header', string> = {
  header: 'h',
  nameKeys: 'k',
  citizens: 'c',
  messages: 'm',
  idempotency: 'i',
  receipts: 'r',
  windows: 'w',
};
const SECTION_OF = new Map<string, Section | 'header'>(
  Object.entries(TAG_OF).map(([section, tag]) => [tag, section as Section | 'header']),
);
/**
 * Sections whose lines are the in-memory encoding of records, in blocks, as a JSON string of base64
 * (see records.ts): a start copies them into memory without parsing a JSON object per record, and
 * with one base64 call a block. `nameKeys` holds the citizens' words (two little-endian 32-bit
 * words a citizen, in the citizens' order), as base64 too. The others are a JSON value a line.
 */
const ENCODED = new Set<Section>(['citizens', 'messages', 'receipts']);
const isEncoded = (section: Section): section is 'citizens' | 'messages' | 'receipts' => ENCODED.has(section);
/** The bytes of records a line holds at most: a 64 KiB line, decoded in well under a millisecond. */
const BLOCK_BYTES = 48 * 1024;
/** Blocks short enough that a reader with the same string limit can read a line (tests set a tiny one). */
const blockBytes = (options: ChunkOptions) =>
  Math.max(8, Math.min(BLOCK_BYTES, Math.floor(((options.maxStringBytes ?? MAX_STRING_BYTES) - 2) / 32) * 24));
const noCounts = (): Record<Section, number> =>
  Object.fromEntries(SECTIONS.map((section) => [section, 0])) as Record<Section, number>;
interface Header {
  format: typeof FORMAT;
  version: number;
  seq: number;
  /** Records in each section (for `nameKeys`, citizens whose words follow: all of them, or none). */
  counts: Record<Section, number>;
  drift: Drift;
  telemetry: object | null;
  /** What the citizens' words are, when the snapshot carries them. */
  nameKeys?: string;
  /** A delta's: the sequence it follows. */
  from?: number;
}

/** The snapshot as lines: a header (sequence, counts, the small values), then the records in blocks or a line each. */
export function* snapshotLines(data: SnapshotData, options: ChunkOptions = {}): Generator<string> {
  const words = data.nameKeys === null ? null : data.citizens.words();
  const counts = Object.fromEntries(
    SECTIONS.map((s) => [s, s === 'nameKeys' ? (words ? data.citizens.length : 0) : data[s].length]),
  ) as Record<Section, number>;
  const header: Header = {
    format: FORMAT,
    version: VERSION,
    seq: data.seq,
    counts,
    drift: data.drift,
    telemetry: data.telemetry,
    ...(words ? { nameKeys: data.nameKeys! } : {}),
    ...(data.from === undefined ? {} : { from: data.from }),
  };
  yield `${TAG_OF.header}${JSON.stringify(header)}`;
  const bytes = blockBytes(options);
  for (const section of SECTIONS) {
    const tag = TAG_OF[section];
    if (section === 'nameKeys') {
      if (words) yield* quoted(tag, wordBlocks(words, bytes));
      continue;
    }
    if (isEncoded(section)) {
      // A view: it cannot move while it is written.
      yield* quoted(tag, data[section].blocks(bytes));
      continue;
    }
    let n = 0;
    for (const line of jsonLines(data[section])) {
      yield `${tag}${line}`;
      n++;
    }
    // A list that moved while it was written would leave the header's count wrong: never silently.
    if (n !== counts[section])
      throw new Error(`snapshot: ${section} changed while written (${n} of ${counts[section]})`);
  }
}

/** Words as base64 blocks of little-endian 32-bit words, whole pairs, at most `bytes` bytes a block. */
function* wordBlocks(words: Uint32Array, bytes: number): Generator<string> {
  const perBlock = Math.max(2, Math.floor(bytes / 8) * 2);
  const block = Buffer.allocUnsafe(perBlock * 4);
  for (let from = 0; from < words.length; from += perBlock) {
    const to = Math.min(words.length, from + perBlock);
    for (let i = from; i < to; i++) block.writeUInt32LE(words[i]!, 4 * (i - from));
    yield block.toString('base64', 0, 4 * (to - from));
  }
}

function* jsonLines(records: Iterable<unknown>): Generator<string> {
  for (const record of records) yield JSON.stringify(record);
}
function* quoted(tag: string, lines: Iterable<string>): Generator<string> {
  for (const line of lines) yield `${tag}"${line}"`;
}

/** Puts one record of a section written a JSON value a record (any section, in the old format) into the loaded data. */
function take(data: LoadedData, section: (typeof SECTIONS_V2)[number], value: unknown): void {
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
      data.windows.push(windowLine(value));
      return;
  }
}

/** A window's line as written (WindowLine), or an error: damage, named with its line. */
function windowLine(value: unknown): WindowLine {
  const [key, deltas, movedAt] = Array.isArray(value) ? value : [];
  if (
    typeof key !== 'string' ||
    !Array.isArray(deltas) ||
    !deltas.every((d) => typeof d === 'number') ||
    (movedAt !== undefined && typeof movedAt !== 'number')
  )
    throw new Error('a drift window line is not [key, deltas, movedAt]');
  return movedAt === undefined ? [key, deltas] : [key, deltas, movedAt];
}

/**
 * Reads a snapshot's lines, one at a time, into the data they hold (SnapshotFile.read gives it a
 * file's lines a chunk at a time): version 4, 3, and 2 (a record a line: a block of one). Given the
 * data a snapshot read (`into`), it reads a delta that follows it into that data.
 *
 * A line that fails its checksum or does not read is damage: kept in `damage` with the intact
 * lines after it, never skipped silently. Strict (a start, a check), nothing after the first damage
 * is applied (the data is not to be used); `tolerant` (a salvage), every intact line of version 4
 * is applied by the section its letter names, and the citizens' name keys are left to compute.
 */
export class SnapshotReader {
  readonly data: LoadedData;
  header: Header | undefined;
  readonly damage: Damage[] = [];
  readonly #path: string;
  readonly #delta: boolean;
  readonly #tolerant: boolean;
  /** An earlier file was damaged: a delta's `from` cannot be held against what was read. */
  readonly #afterDamage: boolean;
  #sections: readonly Section[] = SECTIONS;
  #section = 0;
  #left = 0;
  /** The citizens' words (read before them), or zeros for a list that carries words when the file has none. */
  #words: Uint32Array | undefined;
  #wordsRead = 0;
  #citizensRead = 0;
  /** The file's lines carry checksums and section letters (version 4). */
  #checked = false;
  #intact = 0;
  #end = 0;
  #open: Damage | undefined;

  constructor(path: string, into?: LoadedData, options: { tolerant?: boolean; afterDamage?: boolean } = {}) {
    this.#path = path;
    this.#delta = into !== undefined;
    this.#tolerant = options.tolerant ?? false;
    this.#afterDamage = options.afterDamage ?? false;
    this.data = into ?? emptyData();
  }

  /** Takes one line as readRecordLines gives it. */
  read(line: LineRead): void {
    this.#end = line.end;
    if (line.lineNo === 1) this.#checked = line.checked;
    // Version 4 ends every line with its newline and checks every line.
    const whole = line.text !== undefined && (!this.#checked || (line.checked && !line.last));
    let reason = whole ? undefined : line.text === undefined ? 'fails its checksum' : 'carries no checksum';
    if (whole && (this.damage.length === 0 || this.#tolerant)) {
      try {
        this.line(line.text!, line.lineNo, line.checked);
        this.#intact++;
        this.#open = undefined;
        return;
      } catch (error) {
        // Damage, below: what was wrong with it goes with it.
        reason = (error as Error).message.replace(`${this.#path}: `, '');
      }
    } else if (whole) {
      this.#intact++;
      this.#open = undefined;
      return;
    }
    if (this.#open && this.#open.end === line.offset) this.#open.end = line.end;
    else
      this.damage.push(
        (this.#open = {
          file: this.#path,
          offset: line.offset,
          end: line.end,
          intactAfter: this.#intact,
          ...(reason ? { reason } : {}),
        }),
      );
  }

  line(line: string, lineNo: number, checked = false): void {
    if (!this.header) {
      if (!checked) return this.#header(JSON.parse(line) as Header);
      if (line.charCodeAt(0) === 0x68) return this.#header(JSON.parse(line.slice(1)) as Header);
      // The header was damaged: a salvage goes on with what the delta's name or the journals say.
      if (!this.#tolerant) throw new Error(`${this.#path}: line ${lineNo} is not a header`);
      this.#header({
        format: FORMAT,
        version: VERSION,
        seq: -1,
        counts: noCounts(),
        drift: emptyDrift(),
        telemetry: null,
      });
    }
    let name: Section;
    if (checked) {
      const tagged = SECTION_OF.get(line[0]!);
      if (tagged === undefined || tagged === 'header')
        throw new Error(`${this.#path}: line ${lineNo} names no section`);
      line = line.slice(1);
      if (this.#tolerant) {
        // Name keys are computed anew after a salvage: a damaged block of them would shift the rest.
        if (tagged === 'nameKeys') return;
        name = tagged;
      } else {
        this.#nextSection();
        name = this.#sections[this.#section]!;
        if (this.#left === 0) throw new Error(`${this.#path}: line ${lineNo} is past the records the header counts`);
        if (tagged !== name) throw new Error(`${this.#path}: line ${lineNo} is of ${tagged}, where ${name} come`);
      }
    } else {
      this.#nextSection();
      if (this.#left === 0) throw new Error(`${this.#path}: line ${lineNo} is past the records the header counts`);
      name = this.#sections[this.#section]!;
    }
    let n = 1;
    if (name === 'nameKeys' || isEncoded(name)) {
      // A JSON string whose text needs no unescaping: base64 between quotes.
      if (line.charCodeAt(0) !== 0x22 || line.charCodeAt(line.length - 1) !== 0x22)
        throw new Error(`${this.#path}: line ${lineNo} is not a block of encoded records`);
      const block = line.slice(1, -1);
      if (name === 'nameKeys') n = this.#readWords(block, lineNo);
      else if (name === 'citizens') {
        n = this.data.citizens.addBlock(block, this.#delta || undefined, this.#words, this.#citizensRead);
        this.#citizensRead += n;
      } else n = this.data[name].addBlock(block, name === 'messages' && this.#delta ? false : undefined);
    } else take(this.data, name as (typeof SECTIONS_V2)[number], JSON.parse(line));
    if (this.#tolerant) return;
    if (n > this.#left) throw new Error(`${this.#path}: line ${lineNo} holds more records than the header counts`);
    this.#left -= n;
  }

  #header(read: Header): void {
    if (read.format !== FORMAT || (read.version !== 4 && read.version !== 3 && read.version !== 2))
      throw new Error(`${this.#path}: not a snapshot this version reads`);
    // Version 4 and only it checks its lines: a header of one read without checksums is damage.
    if ((read.version === 4) !== this.#checked) throw new Error(`${this.#path}: a header of another version`);
    if (this.#delta !== (read.from !== undefined) && read.seq !== -1)
      throw new Error(`${this.#path}: ${this.#delta ? 'not a delta' : 'a delta, not a snapshot'}`);
    // A delta follows exactly the state read so far; a gap means a file is missing, and records with it.
    if (this.#delta && !this.#afterDamage && !this.#tolerant && read.from !== this.data.seq)
      throw new Error(`${this.#path}: a delta from ${read.from}, where what was read ends at ${this.data.seq}`);
    if (read.version === 2) this.#sections = SECTIONS_V2;
    else if (read.counts.nameKeys !== 0 && (read.counts.nameKeys !== read.counts.citizens || !read.nameKeys))
      throw new Error(`${this.#path}: name keys for ${read.counts.nameKeys} of ${read.counts.citizens} citizens`);
    this.header = read;
    const data = this.data;
    const keyed = !this.#tolerant && read.version !== 2 && read.counts.nameKeys > 0;
    if (!this.#delta) {
      if (keyed) data.citizens.carryWords();
      data.nameKeys = keyed ? read.nameKeys! : null;
    } else if (data.citizens.carriesWords && (!keyed || read.nameKeys !== data.nameKeys)) {
      // Words of another making (or none): the store computes them all again.
      data.nameKeys = null;
      if (!keyed) this.#words = new Uint32Array(2 * read.counts.citizens);
    }
    if (keyed) this.#words = new Uint32Array(2 * read.counts.nameKeys);
    if (read.seq !== -1) data.seq = read.seq;
    data.drift = { ...emptyDrift(), ...read.drift };
    data.telemetry = read.telemetry ?? null;
    for (const list of ['citizens', 'messages', 'receipts'] as const)
      data[list].reserve(data[list].length + read.counts[list]);
    this.#left = read.counts[this.#sections[0]!];
  }

  /**
   * After the last line: the damage found (a header missing, records fewer than it counts, each
   * with the intact lines after it). Strict, the data is to be used only when there is none.
   */
  done(): Damage[] {
    if (this.damage.length === 0 && !this.#tolerant) {
      if (!this.header)
        this.damage.push({
          file: this.#path,
          offset: 0,
          end: this.#end,
          intactAfter: 0,
          unit: 'lines',
          reason: 'no header',
        });
      else {
        this.#nextSection();
        if (this.#left !== 0)
          this.damage.push({
            file: this.#path,
            offset: this.#end,
            end: this.#end,
            intactAfter: 0,
            unit: 'lines',
            reason: 'the file ends before the records its header counts',
          });
      }
    }
    for (const d of this.damage) {
      if (d.unit === 'lines') continue;
      d.intactAfter = this.#intact - d.intactAfter;
      d.unit = 'lines';
    }
    return this.damage;
  }

  /** The data, once every line was given; throws on damage (tests and tools that want the data or nothing). */
  finish(): LoadedData {
    const damage = this.done();
    if (damage.length > 0) throw new Error(`${this.#path}: damaged at byte ${damage[0]!.offset}`);
    return this.data;
  }

  #nextSection(): void {
    while (this.#left === 0 && this.#section < this.#sections.length - 1)
      this.#left = this.header!.counts[this.#sections[++this.#section]!];
  }

  /** Keeps the words of the next citizens, from a block; how many citizens it covered. */
  #readWords(base64: string, lineNo: number): number {
    const bytes = Buffer.from(base64, 'base64');
    if (bytes.length === 0 || bytes.length % 8 !== 0)
      throw new Error(`${this.#path}: line ${lineNo} is not a block of name keys`);
    const n = bytes.length / 8;
    const words = this.#words!;
    if (2 * (this.#wordsRead + n) > words.length)
      throw new Error(`${this.#path}: line ${lineNo} holds more name keys than the header counts`);
    for (let i = 0; i < 2 * n; i++) words[2 * this.#wordsRead + i] = bytes.readUInt32LE(4 * i);
    this.#wordsRead += n;
    return n;
  }
}

/** A delta's file: `snapshot-<its sequence, 12 digits>.jsonl`. */
const DELTA = /^snapshot-(\d{12,})\.jsonl$/;
const deltaName = (seq: number) => `snapshot-${String(seq).padStart(12, '0')}.jsonl`;

/**
 * lowdb's adapter for the embedded store's snapshot, streaming: JSON Lines (`snapshot.jsonl`), a
 * header then the records (citizens, messages and receipts in their in-memory encoding, in base64
 * blocks), read and written a chunk at a time; written durably (temp file, fsync, rename, fsync of
 * the folder; lowdb's own JSONFile renames but never fsyncs, and reads and writes the whole file as
 * one string). Deltas (`snapshot-<seq>.jsonl`, what was written since the file before) follow it;
 * a read reads the snapshot then each delta, and writing a snapshot removes them. A snapshot of
 * the old format (`snapshot.json`, one JSON object) is read a member at a time too, and removed
 * once a new one is written.
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
  /** The version of the snapshot the last read read (1: `snapshot.json`); below 4 lines carry no checksums. */
  readVersion: number | undefined;
  /** What the last read found damaged: the snapshot's and the deltas' lines that fail their checksum or do not read. */
  damage: Damage[] = [];
  readonly #tolerant: boolean;
  /** The deltas after the snapshot, by file name, with their bytes. */
  readonly deltas = new Map<string, number>();
  /** Deltas a snapshot written after them covers (a crash came before their removal). */
  #stale: string[] = [];

  /** `tolerant`: a salvage's read, which applies every intact line (see SnapshotReader). */
  constructor(path: string, legacyPath: string, options: ChunkOptions = {}, tolerant = false) {
    this.path = path;
    this.legacyPath = legacyPath;
    this.#options = options;
    this.#tolerant = tolerant;
  }

  /** Bytes of the deltas after the snapshot. */
  get deltaBytes(): number {
    let bytes = 0;
    for (const b of this.deltas.values()) bytes += b;
    return bytes;
  }

  /**
   * Reads the snapshot and its deltas. What fails its checksum or does not read goes to `damage`
   * (then, unless `tolerant`, the data is not to be used: the store refuses to start).
   */
  async read(): Promise<LoadedData | null> {
    this.damage = [];
    const tolerant = this.#tolerant;
    const data = await this.#readSnapshot();
    const dir = dirname(this.path);
    const files = await readdir(dir);
    // By number: a sequence past 12 digits makes a longer name, which sorts before shorter ones as text.
    const names = files
      .filter((f) => DELTA.test(f))
      .sort((a, b) => {
        const [x, y] = [BigInt(DELTA.exec(a)![1]!), BigInt(DELTA.exec(b)![1]!)];
        return x < y ? -1 : x > y ? 1 : 0;
      });
    this.deltas.clear();
    this.#stale = [];
    // A salvage whose snapshot lost its header: the journals start after what it held.
    if (data && data.seq === -1) {
      const journals = journalFiles(files);
      data.seq = journals.length > 0 ? Number(JOURNAL_NAME.exec(journals[0]!)![1]) - 1 : 0;
    }
    if (names.length === 0) return data;
    const into = data ?? emptyData();
    for (const name of names) {
      const seq = Number(DELTA.exec(name)![1]);
      if (seq <= into.seq) {
        this.#stale.push(name);
        continue;
      }
      const path = join(dir, name);
      const reader = new SnapshotReader(path, into, { tolerant, afterDamage: this.damage.length > 0 });
      await readRecordLines(path, (line) => reader.read(line), this.#options);
      this.damage.push(...reader.done());
      const version = reader.header?.version ?? VERSION;
      if (version < (this.readVersion ?? VERSION)) this.readVersion = version;
      // A delta's name is its sequence, whether or not its header could be read.
      if (tolerant) into.seq = seq;
      this.deltas.set(name, (await stat(path)).size);
    }
    return into;
  }

  async #readSnapshot(): Promise<LoadedData | null> {
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

  /** Writes the whole state as the snapshot, then removes the deltas it covers. */
  async write(data: SnapshotData): Promise<void> {
    if (data.from !== undefined) throw new TypeError('a delta goes to writeDelta');
    this.lastWrite = await writeLinesDurably(this.path, snapshotLines(data, this.#options), {
      ...this.#options,
      checksums: true,
    });
    // An old-format snapshot is left only by a start that read it (or a crash just after this write).
    const covered = [...this.deltas.keys(), ...this.#stale].map((name) => join(dirname(this.path), name));
    this.deltas.clear();
    this.#stale = [];
    for (const path of [this.legacyPath, ...covered])
      await unlink(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    await syncDir(dirname(this.path));
    this.readLegacy = false;
    this.readVersion = VERSION;
  }

  /** Writes a delta (`data.from` set: what was written since the snapshot or delta at that sequence). */
  async writeDelta(data: SnapshotData): Promise<void> {
    if (data.from === undefined) throw new TypeError('a delta says what it follows');
    const name = deltaName(data.seq);
    this.lastWrite = await writeLinesDurably(join(dirname(this.path), name), snapshotLines(data, this.#options), {
      ...this.#options,
      checksums: true,
    });
    this.deltas.set(name, this.lastWrite.bytes);
  }

  async #readLines(): Promise<LoadedData> {
    const reader = new SnapshotReader(this.path, undefined, { tolerant: this.#tolerant });
    this.lastRead = await readRecordLines(this.path, (line) => reader.read(line), this.#options);
    this.damage.push(...reader.done());
    this.readVersion = reader.header?.version;
    return reader.data;
  }

  /** The old format: `{"seq":..,"citizens":[..],"messages":[..],..}`, a member or element at a time. */
  async #readLegacy(): Promise<LoadedData> {
    const data = emptyData();
    this.lastRead = await readJSONMembers(
      this.legacyPath,
      new Set(SECTIONS_V2),
      (key, value) => {
        if ((SECTIONS_V2 as readonly string[]).includes(key)) take(data, key as (typeof SECTIONS_V2)[number], value);
        else if (key === 'seq') data.seq = value as number;
        else if (key === 'drift') data.drift = { ...emptyDrift(), ...(value as Drift) };
        else if (key === 'telemetry') data.telemetry = (value as object | null) ?? null;
      },
      this.#options,
    ).catch(async (error: unknown) => {
      if (error instanceof StringLimitError || (error as NodeJS.ErrnoException).code !== undefined) throw error;
      // Text that does not parse: damage, as the newer formats report it (no offset is known).
      const { size } = await stat(this.legacyPath);
      this.damage.push({
        file: this.legacyPath,
        offset: 0,
        end: size,
        intactAfter: 0,
        unit: 'lines',
        reason: (error as Error).message,
      });
      return { bytes: size, chunks: 0 };
    });
    this.readVersion = 1;
    return data;
  }
}

/** Every record a data folder's snapshot holds, read the way the store reads it (tests and tools). */
export async function readSnapshot(dir: string, options: ChunkOptions = {}): Promise<LoadedData | null> {
  return new SnapshotFile(`${dir}/${SNAPSHOT_FILE}`, `${dir}/${LEGACY_SNAPSHOT_FILE}`, options).read();
}
export const SNAPSHOT_FILE = 'snapshot.jsonl';
export const LEGACY_SNAPSHOT_FILE = 'snapshot.json';
