import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { verifyConsistency } from '../omip/merkle.ts';
import { verifyTreeHead, type TreeHead } from '../omip/signer.ts';
import { verifyLog, type PublishedLog } from '../omip/verify.ts';
import { PATH } from '../operations/paths.ts';

// npm run verify-receipts -- <base url> [--since head.json] [--save head.json]: downloads a server's
// receipt log and checks it offline; with --since, also that the log still holds the one an earlier
// run saved (a server that rewrote and re-signed its history passes every check but this one).
const usage =
  'usage: npm run verify-receipts -- <base url> [--since <saved head>] [--save <file>], e.g. http://localhost:4321';
function readArgs() {
  try {
    return parseArgs({ allowPositionals: true, options: { since: { type: 'string' }, save: { type: 'string' } } });
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`);
    process.exit(2);
  }
}
const args = readArgs();
const base = (args.positionals[0] ?? '').replace(/\/+$/, '');
if (!/^https?:\/\//.test(base)) {
  console.error(usage);
  process.exit(2);
}
const get = async (path: string) => {
  // Its own User-Agent: the bot wall names it as the operator's traffic, never as a bot.
  const res = await fetch(base + path, {
    signal: AbortSignal.timeout(30_000),
    headers: { 'User-Agent': 'agent-node-verify-receipts' },
  });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status}`);
  return res.json() as Promise<Record<string, any>>;
};

const fail = (message: string): never => {
  console.error(`FAIL ${message}`);
  process.exit(1);
};
const log = await get(PATH.getLog).catch((e: Error) =>
  fail(`cannot read ${base}${PATH.getLog}: ${e.cause instanceof Error ? e.cause.message : e.message}`),
);
const size: number = log.tree_head.tree_size;

// Pages come newest first, each below the last: the walk ends at index 0, or fails, whatever the
// server sends (a page repeated or out of order would otherwise page for ever). Receipts appended
// while it runs are allowed for, up to a margin past the head.
const MARGIN = 10_000;
const receipts: PublishedLog['receipts'] = [];
let below = size + MARGIN;
let cursor: string | null = null;
do {
  const page: Record<string, any> = await get(
    `/api/omip/receipts?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
  );
  for (const r of page.receipts as PublishedLog['receipts']) {
    if (!Number.isSafeInteger(r.logIndex) || r.logIndex < 0 || r.logIndex >= below)
      fail(`the receipt pages are not in log order: logIndex ${r.logIndex} after ${below}`);
    below = r.logIndex;
    receipts.push(r);
  }
  cursor = page.receipts.length > 0 && below > 0 ? page.nextCursor : null;
  if (page.receipts.length === 0 && page.nextCursor) fail('an empty page of receipts names a next page');
} while (cursor);

// Receipts added after the tree head was read are not covered by it.
const covered = receipts.filter((r) => r.logIndex < size);
const problems = verifyLog({ tree_head: log.tree_head, public_key: log.public_key, receipts: covered });
if (problems.length > 0) {
  for (const p of problems) console.error(`FAIL ${p}`);
  process.exit(1);
}

let since = '';
if (args.values.since) {
  // What --save wrote: a signed head and the key it was signed with.
  let saved: { tree_head: TreeHead; public_key: string };
  try {
    saved = JSON.parse(readFileSync(args.values.since, 'utf8'));
  } catch (error) {
    fail(`cannot read the saved head ${args.values.since}: ${(error as Error).message}`);
  }
  const old = saved!.tree_head;
  if (!old || !verifyTreeHead(old, saved!.public_key))
    fail(`the saved head in ${args.values.since} does not verify with its own key`);
  if (old.tree_size > size) fail(`the log has ${size} receipts, fewer than the ${old.tree_size} it had`);
  if (old.tree_size > 0) {
    const answer = await get(`${PATH.getLog}?first=${old.tree_size}`);
    const c = answer.consistency;
    const bytes = (hex: string) => Buffer.from(hex, 'hex');
    if (
      !c ||
      !Array.isArray(c.proof) ||
      c.second !== answer.tree_head.tree_size ||
      c.first_root !== old.root_hash ||
      c.second_root !== answer.tree_head.root_hash ||
      !verifyTreeHead(answer.tree_head, answer.public_key) ||
      !verifyConsistency(old.tree_size, c.second, bytes(c.first_root), bytes(c.second_root), c.proof.map(bytes))
    )
      fail(`the log no longer holds the ${old.tree_size} receipts of the saved head: its history was rewritten`);
  }
  since = `, consistent with the saved head of ${old.tree_size}`;
}
if (args.values.save)
  writeFileSync(args.values.save, `${JSON.stringify({ tree_head: log.tree_head, public_key: log.public_key })}\n`);
console.log(
  `OK ${covered.length} receipts, root ${size > 0 ? log.tree_head.root_hash : '(empty)'}, signature valid${since}`,
);
