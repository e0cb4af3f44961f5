/**
 * What counting costs the bot ledger under a flood of invented bot names, beside a table family's
 * request measured in the same run (the baseline): every family of the bot table holds its row
 * first (about 2,100), then 100,000 requests each of GPTBot, of invented names from as many
 * addresses (the hour's tally remembers 8,192 clients; past them the longest-remembered gives way,
 * so every new address gives evidence and each new name is a Space-Saving replacement), of as many
 * more, and of invented names from one address. Prints µs a request and the ratio to the baseline.
 *
 *   node bench/ledger-pool.ts
 */
import { loadContent } from '../api/content/load.ts';
import { asFamily } from '../api/telemetry/classification/bot-lists.ts';
import { classificationOf, type Classification } from '../api/telemetry/classification/classify.ts';
import { count, emptySnapshot, type LedgerEvent } from '../api/telemetry/ledger/ledger.ts';

const content = await loadContent('content');
const table = [
  ...content.botFamilies.families.filter((f) => f.kind !== 'operator').map(classificationOf),
  ...content.botFamiliesGenerated.families.map((g) => classificationOf(asFamily(g))),
];
const now = new Date();
const s = emptySnapshot(now);
const event = (classification: Classification, client?: string): LedgerEvent => ({
  at: now,
  method: 'GET',
  path: '/llms.txt',
  status: 200,
  host: 'site.example',
  classification,
  verification: 'unverifiable',
  bait: false,
  disallowed: false,
  client,
});
for (const c of table) count(s, event(c), now);
const N = 100_000;
const invented = Array.from({ length: N }, (_, i): Classification => ({
  bot: true,
  family: `junk${i}-bot`,
  class: 'Bot',
  known: null,
  verify: 'none',
}));
const gpt = table.find((c) => c.family === 'GPTBot')!;
const runs: [string, (i: number) => LedgerEvent][] = [
  ['GPTBot (baseline)', (i) => event(gpt, `g${i}`)],
  ['invented, an address each', (i) => event(invented[i]!, `a${i}`)],
  ['invented, an address each, 100,000 more', (i) => event(invented[i]!, `b${i}`)],
  ['invented, one address', (i) => event(invented[i]!, 'one')],
];
let baseline = 0;
for (const [label, make] of runs) {
  const events = Array.from({ length: N }, (_, i) => make(i));
  const started = process.hrtime.bigint();
  for (const e of events) count(s, e, now);
  const us = Number(process.hrtime.bigint() - started) / N / 1000;
  baseline ||= us;
  console.log(`${label}: ${us.toFixed(2)} µs a request, ${(us / baseline).toFixed(2)}× the baseline`);
}
console.log(
  `rows: ${Object.keys(s.families).length}, pool rows: ${Object.values(s.families).filter((r) => r.pooled).length}`,
);
