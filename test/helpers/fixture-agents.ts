import { readdirSync, readFileSync } from 'node:fs';
import { tokenCount, tokenEnd, tokenScan, tokenStart } from '../../api/telemetry/classification/tokens.ts';

const fixtures = new URL('../telemetry/fixtures/', import.meta.url);

/** Every User-Agent of test/telemetry/fixtures (a tab-separated line's last column), as written. */
export const fixtureAgents: string[] = readdirSync(fixtures)
  .filter((f) => /\.(txt|tsv)$/.test(f))
  .flatMap((f) => readFileSync(new URL(f, fixtures), 'utf8').split('\n'))
  .filter((l) => l !== '' && !l.startsWith('#'))
  .map((l) => l.split('\t').at(-1)!);

/** The same, each also as node's parser hands a header over: one byte a character (Latin-1). */
export const fixtureAgentsAsReceived: string[] = fixtureAgents.flatMap((ua) => [
  ua,
  Buffer.from(ua).toString('latin1'),
]);

/** Every token the classifier's scan finds in these User-Agents, lowercased: its string, scan, index and range. */
export function* scannedTokens(userAgents: readonly string[]) {
  for (const ua of userAgents) {
    const text = ua.toLowerCase();
    const tokens = tokenScan(text);
    for (let i = 0; i < tokenCount(tokens); i++)
      yield { text, tokens, i, start: tokenStart(tokens, i), end: tokenEnd(tokens, i) };
  }
}
