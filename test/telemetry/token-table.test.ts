import { describe, expect, it } from 'vitest';
import { fixtureAgentsAsReceived, scannedTokens } from '../helpers/fixture-agents.ts';
import { createTokenTable } from '../../api/telemetry/classification/token-table.ts';
import { lowerTokens, tokenHashAt } from '../../api/telemetry/classification/tokens.ts';

// A table asked with a range of a string gives what a Map asked with that range sliced out gives.
const userAgents = fixtureAgentsAsReceived;

describe('token table', () => {
  // Every third distinct token of the fixtures, with non-ASCII and empty words among them.
  const distinct = [...new Set(userAgents.flatMap(lowerTokens))];
  const map = new Map<string, number>(
    [...distinct.filter((_, i) => i % 3 === 0), '', 'ä', 'ı̇', '\u212a'].map((w, i) => [w, i]),
  );
  const table = createTokenTable(map);

  it("gives a Map's answer for every token of the fixtures, by its range and by its scan's hash", () => {
    const differ: string[] = [];
    let checked = 0;
    for (const { text, tokens, i, start, end } of scannedTokens(userAgents)) {
      checked++;
      const expected = map.get(text.slice(start, end));
      if (table.get(text, start, end) !== expected || table.get(text, start, end, tokenHashAt(tokens, i)) !== expected)
        differ.push(text.slice(start, end));
    }
    expect(differ).toEqual([]);
    expect(checked).toBeGreaterThan(userAgents.length);
    expect(distinct.length).toBeGreaterThan(10_000);
  });

  it('finds a word inside any string, and nothing for a word it lacks or a range cut short', () => {
    for (const [word, value] of map) expect(table.get(`x ${word} y`, 2, 2 + word.length)).toBe(value);
    const held = distinct[0]!;
    expect(table.get(held, 0, held.length - 1)).toBe(map.get(held.slice(0, -1)));
    expect(table.get('no-such-token-here', 0, 18)).toBeUndefined();
    expect(createTokenTable(new Map()).get('a', 0, 1)).toBeUndefined();
  });
});
