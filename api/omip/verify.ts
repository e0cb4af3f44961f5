import { receiptId, receiptLeaf } from './receipts.ts';
import { nodeHash, rootOf, verifyInclusion } from './merkle.ts';
import { verifyTreeHead, type TreeHead } from './signer.ts';

/** What a verifier downloads: the signed head, the public key, and every receipt in log order. */
export interface PublishedLog {
  tree_head: TreeHead;
  public_key: string;
  receipts: ({ id: string; logIndex: number; prev: string | null } & Record<string, unknown>)[];
}

/**
 * Checks a receipt log offline: every id is the hash of its receipt, each `prev` names the receipt
 * before it, the Merkle root of the ids is the signed root, and the signature holds. Returns the
 * problems found (none means the log is intact).
 */
export function verifyLog(log: PublishedLog): string[] {
  const problems: string[] = [];
  const ordered = [...log.receipts].sort((a, b) => a.logIndex - b.logIndex);
  ordered.forEach((r, i) => {
    const { id, logIndex, ...body } = r;
    if (logIndex !== i) problems.push(`receipt at position ${i} says logIndex ${logIndex}`);
    if (receiptId(body) !== id) problems.push(`receipt ${id} does not hash to its id`);
    const expectedPrev = i === 0 ? null : ordered[i - 1]!.id;
    if (r.prev !== expectedPrev) problems.push(`receipt ${id} has prev ${r.prev}, expected ${expectedPrev}`);
  });
  if (ordered.length !== log.tree_head.tree_size)
    problems.push(`the log has ${ordered.length} receipts, the tree head says ${log.tree_head.tree_size}`);
  const leaves = ordered.map((r) => receiptLeaf(r.id));
  if (rootOf(leaves).toString('hex') !== log.tree_head.root_hash)
    problems.push('the Merkle root of the receipts is not the signed root');
  if (!verifyTreeHead(log.tree_head, log.public_key))
    problems.push('the tree head signature does not verify with the published key');
  return problems;
}

/** Checks one receipt answer's inclusion proof against its root. */
export function verifyReceiptInclusion(answer: {
  receipt: { id: string };
  logIndex: number;
  tree_size: number;
  root_hash: string;
  audit_path: string[];
}): boolean {
  return verifyInclusion(
    answer.logIndex,
    answer.tree_size,
    receiptLeaf(answer.receipt.id),
    answer.audit_path.map((h) => Buffer.from(h, 'hex')),
    Buffer.from(answer.root_hash, 'hex'),
  );
}

/**
 * verifyLog's checks over a log read in order, an entry at a time, for a log too large to hold:
 * positions without gaps, each id the hash of its receipt, each `prev` the id before it, and the
 * RFC 9162 root of the ids, built from the roots of complete subtrees (a few dozen hashes held).
 * Returns the problems found, the log's size and its root (hex).
 */
export async function verifyLogInOrder(
  entries: AsyncIterable<{ index: number; id: string; receipt: Record<string, unknown> }>,
) {
  const problems: string[] = [];
  const complete: { size: number; hash: Buffer }[] = [];
  let size = 0;
  let prev: string | null = null;
  for await (const { index, id, receipt } of entries) {
    if (index !== size) {
      problems.push(`the receipt at position ${size} says position ${index}`);
      break;
    }
    if (receiptId(receipt) !== id) problems.push(`receipt ${id} does not hash to its id`);
    if (receipt.prev !== prev) problems.push(`receipt ${id} has prev ${String(receipt.prev)}, expected ${prev}`);
    let node = { size: 1, hash: receiptLeaf(id) };
    while (complete.length > 0 && complete.at(-1)!.size === node.size)
      node = { size: node.size * 2, hash: nodeHash(complete.pop()!.hash, node.hash) };
    complete.push(node);
    prev = id;
    size++;
  }
  // The root joins the complete subtrees from the smallest (rightmost) up.
  let root = complete.length === 0 ? rootOf([]) : complete.at(-1)!.hash;
  for (let i = complete.length - 2; i >= 0; i--) root = nodeHash(complete[i]!.hash, root);
  return { problems, size, root: root.toString('hex') };
}
