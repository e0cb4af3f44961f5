import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { loadContent } from '../content/load.ts';
import { createClassifier } from '../telemetry/classification/classify.ts';

// npm run classify: User-Agents on standard input, one a line; one JSON line each on standard
// output, {userAgent, bot, family, class, verify} (and unknown: true for an unknown client, counted
// apart from bots and people): "why is this counted as X".
const { botFamilies, botFamiliesGenerated } = await loadContent(resolve(process.env.CONTENT_DIR ?? 'content'));
const classify = createClassifier(botFamilies.families, {
  humanClients: botFamilies.human_clients,
  generated: botFamiliesGenerated.families,
});
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const userAgent = line.replace(/\r$/, '');
  const c = classify(userAgent);
  process.stdout.write(
    `${JSON.stringify({ userAgent, bot: c.bot, family: c.family, class: c.class, verify: c.verify, ...(c.operator ? { operator: true } : {}), ...(c.unknown ? { unknown: true } : {}) })}\n`,
  );
}
