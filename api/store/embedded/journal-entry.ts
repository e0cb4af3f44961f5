import { z } from 'zod';
import { CitizenSchema, MessageSchema } from '../../schemas/citizenship.ts';
import type { JournalEntry } from './journal.ts';

// What each journal operation's value must be for the store to apply it. An entry that holds its
// checksum can still be wrong (written by a tool, or restored from the wrong place): applied, it
// threw from deep inside the store, so a start crashed with a stack. Checked at replay, it is
// damage like any other, named by file and byte.

/** A text the idempotency records hold behind a 16-bit length. */
const short = z.string().refine((s) => Buffer.byteLength(s) <= 0xffff, 'is longer than 65,535 bytes');

const CitizenRecordSchema = CitizenSchema.extend({ passportHash: z.string() });

const IdempotencyRecordSchema = z.object({
  keyHash: short,
  fingerprint: short,
  status: z.number().int().min(0).max(0xffff),
  // Records with no answer field at all are held as ones that kept none.
  sealed: z.string().nullish(),
  createdAt: short,
});

const DriftSampleSchema = z.object({
  decision_id: z.string(),
  entity_id: z.string(),
  verdict: z.string(),
  delta_t: z.number(),
  delta_window: z.number(),
  failed_predicates: z.array(z.string()),
  contraction_attempts: z.number(),
  fail_closed: z.boolean(),
  at: z.string(),
});

const DriftWriteSchema = z.object({
  entityId: z.string(),
  appended: z.array(z.number()),
  keep: z.number().int().min(0),
  sample: DriftSampleSchema,
});

const ReceiptEntrySchema = z.object({
  id: z.string(),
  index: z.number().int().min(0),
  receipt: z.record(z.string(), z.unknown()),
});

/** The value of each operation a write makes (the ones a unit may hold). */
const WRITES = {
  'citizen.add': CitizenRecordSchema,
  'message.add': MessageSchema,
  'idempotency.put': IdempotencyRecordSchema,
  'drift.record': DriftWriteSchema,
  // The bot ledger is a document only the telemetry reads (and checks).
  'telemetry.save': z.record(z.string(), z.unknown()),
  'receipt.append': ReceiptEntrySchema,
} as const;
type WriteOp = keyof typeof WRITES;
const isWrite = (op: string): op is WriteOp => Object.hasOwn(WRITES, op);

/** Why `v` is no value of `op`, or undefined when it is one. */
function writeFault(op: WriteOp, v: unknown): string | undefined {
  const result = WRITES[op].safeParse(v);
  if (result.success) return undefined;
  const issue = result.error.issues[0]!;
  return `${op} ${issue.path.length > 0 ? `${issue.path.join('.')} ` : ''}${issue.message}`;
}

/**
 * Why a journal entry cannot be applied (its operation unknown, its value of the wrong shape), in
 * a few words; undefined when it can be.
 */
export function entryFault(entry: JournalEntry): string | undefined {
  const { op, v } = entry;
  if (isWrite(op)) return writeFault(op, v);
  if (op === 'unit') {
    // A unit holds writes only: one level, as the store makes them.
    if (!Array.isArray(v) || v.length === 0) return 'unit holds no list of writes';
    for (const write of v as unknown[]) {
      const { op: inner, v: value } = (write ?? {}) as { op?: unknown; v?: unknown };
      if (typeof inner !== 'string' || !isWrite(inner)) return `unit holds an unknown operation ${String(inner)}`;
      const fault = writeFault(inner, value);
      if (fault) return `unit: ${fault}`;
    }
    return undefined;
  }
  // Journals written before units existed.
  if (op === 'oath') {
    const { citizen, shout } = (v ?? {}) as { citizen?: unknown; shout?: unknown };
    return writeFault('citizen.add', citizen) ?? (shout === undefined ? undefined : writeFault('message.add', shout));
  }
  return `unknown operation ${op}`;
}
