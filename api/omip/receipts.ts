import { fingerprintOf } from './canonical.ts';
import { leafHash } from './merkle.ts';
import type { MerkleLog } from './merkle-log.ts';
import type { ScoreAnswer } from './score.ts';

/** One agent's side of a dual exchange, as the receipt records it: its id and the gist of its score. */
export type AgentOutcome = { id: string } & Pick<
  ScoreAnswer,
  'verdict' | 'proceed' | 'recovered' | 'delta_t' | 'delta_window' | 'failed_predicates' | 'input_fingerprint'
>;

/** Joint action needs a dual PERSIST, or a contracted recovery to PERSIST (spec 3.1). */
export function jointOutcome(a: AgentOutcome, b: AgentOutcome): { allowed: boolean; reason: string } {
  if (a.verdict === 'PERSIST' && b.verdict === 'PERSIST') return { allowed: true, reason: 'dual PERSIST' };
  if (a.proceed && b.proceed) return { allowed: true, reason: 'contracted recovery to PERSIST' };
  const blocked = [a, b].filter((x) => !x.proceed).map((x) => `${x.id} ${x.verdict}`);
  return { allowed: false, reason: `fail-closed: ${blocked.join(', ')}` };
}

/** The receipt body without its id; the id is the sha256 of its RFC 8785 form. */
export function buildReceipt(
  agents: [AgentOutcome, AgentOutcome],
  constitutionFingerprint: string,
  at: string,
  prev: string | null,
) {
  return {
    type: 'omip.dual-exchange',
    version: 1,
    agents,
    joint: jointOutcome(agents[0], agents[1]),
    constitution_fingerprint: constitutionFingerprint,
    at,
    prev,
  };
}

/**
 * The receipt a key rotation appends (LOG_SIGNING_KEY_ROTATE=1): the log itself says from which
 * position on its heads are signed by another key, and which.
 */
export function buildKeyRotation(
  rotation: { old_key_id: string | null; new_key_id: string },
  at: string,
  prev: string | null,
) {
  return {
    type: 'omip.log-key-rotation',
    version: 1,
    old_key_id: rotation.old_key_id,
    new_key_id: rotation.new_key_id,
    reason:
      'The signing key was missing and the operator started with LOG_SIGNING_KEY_ROTATE=1: tree heads signed before this receipt verify under the old key, later ones under the new.',
    at,
    prev,
  };
}

export const receiptId = (receipt: Record<string, unknown>): string => fingerprintOf(receipt);

/** RFC 9162 leaf of a receipt: H(0x00 || id). */
export const receiptLeaf = (id: string) => leafHash(Buffer.from(id, 'utf8'));

const hex = (bs: Buffer[]) => bs.map((b) => b.toString('hex'));

/** Position and inclusion proof of receipt `index` in the current log. */
export function inclusionOf(index: number, log: MerkleLog) {
  return {
    logIndex: index,
    tree_size: log.size,
    root_hash: log.root().toString('hex'),
    audit_path: hex(log.inclusion(index)),
  };
}

/** The roots of the first `first` receipts and of all of them, and the consistency proof between. */
export function consistencyOf(first: number, log: MerkleLog) {
  return {
    first,
    second: log.size,
    first_root: log.root(first).toString('hex'),
    second_root: log.root().toString('hex'),
    proof: hex(log.consistency(first)),
  };
}
