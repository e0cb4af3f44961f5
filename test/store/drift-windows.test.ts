import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DriftWindows } from '../../api/store/embedded/drift-windows.ts';
import { callersTrimmedTo, callerWindowKey, DRIFT_BOUNDS, windowOwner } from '../../api/store/types.ts';

/**
 * The bounds as the PostgreSQL store states them, the plain way: a client's windows by move order,
 * and callers' windows sorted by (rank within their client, most recently moved first), the first
 * `callersTrimmedTo` kept. The embedded store finds the same windows in one pass, without a sort.
 */
function reference(moves: string[], perClient: number, callers: number): string[] {
  const order = new Map<string, number>();
  moves.forEach((key, i) => {
    const isNew = !order.has(key);
    order.delete(key);
    order.set(key, i);
    const owner = windowOwner(key);
    if (!isNew || owner === null) return;
    const mine = [...order].filter(([k]) => windowOwner(k) === owner).sort((a, b) => b[1] - a[1]);
    for (const [k] of mine.slice(perClient)) order.delete(k);
    const theirs = [...order].filter(([k]) => windowOwner(k) !== null);
    if (theirs.length <= callers) return;
    const seen = new Map<string, number>();
    const ranked = theirs
      .sort((a, b) => b[1] - a[1])
      .map(([k, o]) => {
        const rank = (seen.get(windowOwner(k)!) ?? 0) + 1;
        seen.set(windowOwner(k)!, rank);
        return { k, o, rank };
      })
      .sort((a, b) => a.rank - b.rank || b.o - a.o);
    for (const { k } of ranked.slice(callersTrimmedTo(callers))) order.delete(k);
  });
  return [...order.keys()];
}

describe('the embedded drift windows against the rule stated plainly', () => {
  it('keep the same windows, in the same order, after any sequence of steps', () => {
    const key = fc
      .tuple(fc.integer({ min: 0, max: 11 }), fc.integer({ min: 0, max: 6 }))
      .map(([e, c]) =>
        c === 6 ? `0193a1b2-0000-7000-8000-${String(e).padStart(12, '0')}` : callerWindowKey(`e${e}`, `c${c}`),
      );
    fc.assert(
      fc.property(
        fc.array(key, { maxLength: 120 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 20 }),
        (moves, perClient, callers) => {
          const windows = new DriftWindows({ ...DRIFT_BOUNDS, perClient, callers });
          moves.forEach((k, i) => windows.move(k, [0.1], 8, 1_000 + i));
          expect([...windows.entries()].map(([k]) => k)).toEqual(reference(moves, perClient, callers));
          expect(windows.callers).toBeLessThanOrEqual(callers);
        },
      ),
      { numRuns: 400 },
    );
  });
});
