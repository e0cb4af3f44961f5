import { isUtf8 } from 'node:buffer';
import { Worker } from 'node:worker_threads';
import type { Content } from '../../content/load.ts';
import { parseBatch, type ParsedBatch } from './parse.ts';
import type { LogFormat } from './types.ts';
import type { Outcome } from '../verification/verify.ts';

/** A batch's distinct User-Agents and, line by line, the index of the line's own among them. */
export interface BatchAgents {
  agents: string[];
  agentOf: Int32Array;
  /** Lines set aside as counting nothing but their date: each distinct time and how many lines had it. */
  quiet: { times: string[]; counts: number[] };
  /**
   * What to count, in the order of each one's first line: a group of lines the ledger counts alike,
   * or the index in the batch's lines of a line counted alone.
   */
  items: (LineGroup | number)[];
  /** The latest bot and bait requests, oldest first, for the ledger's recent ones: [item, the line's ISO time]. */
  tail: [number, string][];
}

/** Lines of an ingested batch that the ledger counts alike (line-groups.ts), counted as one event of `n` requests. */
export interface LineGroup {
  /** Its place among the batch's items. */
  item: number;
  /** Index of the lines' User-Agent in the batch's agents. */
  agent: number;
  method: string;
  /** The path and host as the lines have them. */
  path: string;
  host: string;
  status: number;
  /** The earliest and latest times of its lines (ISO), within one hour. */
  since: string;
  at: string;
  /** `at` in ms since 1970. */
  atMs: number;
  n: number;
  /** Counted as requests (a bot, a bait hit, an unknown client); false: only as a referral. */
  request: boolean;
  /** The verification outcome, or 'lookup' when the counting thread looks `address` up (reverse DNS); null for no bot. */
  verification: Outcome | 'lookup' | null;
  address?: string;
  /** Judged against a robots.txt (a bot's lines on a host that has one; none broke a rule). */
  judged: boolean;
  /** The AI product that sent these people, if one did. */
  referral: { operator: string; source: string } | null;
}

/** The robots.txt files the counting thread judges by (createRobotsJudge's arguments). */
export interface RobotsSources {
  own: string;
  others: ReadonlyMap<string, string>;
  ownHosts: readonly string[];
}

/**
 * What a worker needs to judge a line as the counting thread would: telemetryRulesOf's content,
 * and the robots.txt files and ledger retention of the counting thread.
 */
export type LineRules = Pick<
  Content,
  'botFamilies' | 'botFamiliesGenerated' | 'botIpRanges' | 'crawlPolicy' | 'aiReferrers'
> & { robots: RobotsSources; retention?: { hours: number; days: number } };

/** A batch as the ingest route hands it over: JSON records, or a text body's bytes (one record a line). */
export type BatchRecords = (string | Record<string, unknown>)[] | Uint8Array;

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** A text body's records: its lines, without a last empty one or a line's CR. */
export function splitLines(records: BatchRecords): (string | Record<string, unknown>)[] {
  if (!(records instanceof Uint8Array)) return records;
  // Valid UTF-8 without a BOM (the decoder would drop it) is decoded line by line: a line of ASCII
  // stays a one-byte string, where one non-Latin-1 character made the whole body's lines two-byte.
  if (isUtf8(records) && !(records[0] === 0xef && records[1] === 0xbb && records[2] === 0xbf)) {
    const buf = Buffer.from(records.buffer, records.byteOffset, records.length);
    const out: string[] = [];
    const line = (s: number, e: number) => out.push(buf.toString('utf8', s, e > s && buf[e - 1] === 0x0d ? e - 1 : e));
    let s = 0;
    for (let e = buf.indexOf(0x0a); e !== -1; e = buf.indexOf(0x0a, s)) {
      line(s, e);
      s = e + 1;
    }
    if (s < buf.length) line(s, buf.length);
    return out;
  }
  const lines = utf8.decode(records).split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((r) => (r.endsWith('\r') ? r.slice(0, -1) : r));
}

/** A batch read; `accepted` counts the lines set aside too (its `lines` are those left to count). */
export type ParsedWithAgents = ParsedBatch & { agents?: BatchAgents; accepted?: number };

export interface ParsePool {
  parse(records: BatchRecords, format: LogFormat | undefined): Promise<ParsedWithAgents>;
  close(): Promise<void>;
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve: (p: ParsedWithAgents) => void; reject: (e: Error) => void }>;
}

/**
 * Log batches read on `size` worker threads (INGEST_WORKERS), so parsing, the largest cost of an
 * ingest after counting, runs beside the thread that counts; 0 reads them in the calling thread.
 * Each batch goes to the thread with the fewest batches waiting. Threads start at once with
 * `eager` (loading the client lists and tables took a thread ~0.6 s, which the first batch waited
 * for), else on first use, and never keep the process alive.
 */
export function createParsePool(size: number, rules: LineRules, { eager = false } = {}): ParsePool {
  if (size <= 0)
    return { parse: async (records, format) => parseBatch(splitLines(records), format), close: async () => undefined };
  const slots: Slot[] = [];
  let nextId = 0;
  const start = (): Slot => {
    const workerData: LineRules = {
      botFamilies: rules.botFamilies,
      botFamiliesGenerated: rules.botFamiliesGenerated,
      botIpRanges: rules.botIpRanges,
      crawlPolicy: rules.crawlPolicy,
      aiReferrers: rules.aiReferrers,
      robots: rules.robots,
      ...(rules.retention ? { retention: rules.retention } : {}),
    };
    const worker = new Worker(new URL('./parse-worker.ts', import.meta.url), { workerData });
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (m: { id: number; parsed: ParsedBatch; accepted: number; agents: BatchAgents }) => {
      const waiting = slot.pending.get(m.id);
      slot.pending.delete(m.id);
      waiting?.resolve({ ...m.parsed, accepted: m.accepted, agents: m.agents });
    });
    // A thread that fails is replaced; the batches it held are answered with the error (a 5xx the CLI retries).
    worker.on('error', (error) => {
      const i = slots.indexOf(slot);
      if (i >= 0) slots.splice(i, 1);
      for (const w of slot.pending.values()) w.reject(error);
      slot.pending.clear();
    });
    slots.push(slot);
    return slot;
  };
  if (eager) while (slots.length < size) start();
  return {
    parse(records, format) {
      while (slots.length < size) start();
      const slot = slots.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        slot.pending.set(id, { resolve, reject });
        // A body's bytes are handed over: moved when they are a whole buffer of their own (the body
        // is not read again once its fingerprint is taken), else copied once into one (a small
        // Buffer may be a view of Node's shared pool).
        if (records instanceof Uint8Array) {
          const own =
            records.buffer instanceof ArrayBuffer &&
            records.byteOffset === 0 &&
            records.byteLength === records.buffer.byteLength &&
            records.byteLength > Buffer.poolSize;
          const bytes = own ? records : new Uint8Array(records);
          slot.worker.postMessage({ id, records: bytes, format }, [bytes.buffer as ArrayBuffer]);
        } else slot.worker.postMessage({ id, records, format });
      });
    },
    async close() {
      await Promise.all(slots.splice(0).map((s) => s.worker.terminate()));
    },
  };
}
