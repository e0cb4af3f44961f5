import { verifyLog, type PublishedLog } from '../omip/verify.ts';
import { PATH } from '../operations/paths.ts';

// npm run verify-receipts -- <base url>: downloads a server's receipt log and checks it offline.
const base = (process.argv[2] ?? '').replace(/\/+$/, '');
if (!/^https?:\/\//.test(base)) {
  console.error('usage: npm run verify-receipts -- <base url>, e.g. http://localhost:4321');
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
const receipts: PublishedLog['receipts'] = [];
let cursor: string | null = null;
do {
  const page: Record<string, any> = await get(
    `/api/omip/receipts?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
  );
  receipts.push(...page.receipts);
  cursor = page.nextCursor;
} while (cursor);

// Receipts added after the tree head was read are not covered by it.
const covered = receipts.filter((r) => r.logIndex < log.tree_head.tree_size);
const problems = verifyLog({ tree_head: log.tree_head, public_key: log.public_key, receipts: covered });
if (problems.length > 0) {
  for (const p of problems) console.error(`FAIL ${p}`);
  process.exit(1);
}
console.log(
  `OK ${covered.length} receipts, root ${log.tree_head.tree_size > 0 ? log.tree_head.root_hash : '(empty)'}, signature valid`,
);
