import { describe, expect, it } from 'vitest';
import { hashPassport, newPassport } from '../../api/citizenship/passport.ts';
import { loadContentFile } from '../../api/content/load.ts';
import { newId } from '../../api/ids.ts';
import { createOmip } from '../../api/omip/service.ts';
import { openLogSigner } from '../../api/omip/signer.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import { DRIFT_BOUNDS } from '../../api/store/types.ts';

// The service reads and prunes drift windows by its own clock (createOmip's `now`), so a window
// the retention forgot weighs on no verdict, and leaves the store within a minute of a write.
const DAY = 24 * 60 * 60 * 1000;
const constitution = await loadContentFile('content', 'constitution');
const caller = { passport: null, client: '203.0.113.9' };
const good = { steps: [{ action: 'read the seeds', baseline: 'seeds' as const, inputs: [] }] };

describe("the service's clock and the drift windows", () => {
  it('scores a step after the retention against an empty window, and asks the store to prune at most once a minute', async () => {
    const store = openMemoryStore();
    const pruned: number[] = [];
    const prune = store.drift.prune;
    store.drift.prune = async (now) => (pruned.push(now.getTime()), prune(now));
    const start = Date.now();
    let clock = start;
    const omip = createOmip({ store, constitution, signer: await openLogSigner(null), now: () => new Date(clock) });
    const score = (state?: Record<string, number>) =>
      omip.score(
        state
          ? { entity_id: 'sovereign-a', room: 'default', state: { scores: state } }
          : { entity_id: 'sovereign-a', room: 'default', plan: good },
        caller,
      );

    expect((await score({ no_collapse_regime: 0.5 })).window.deltas).toEqual([0.5]);
    clock += 30_000;
    expect((await score()).window.deltas).toEqual([0.5, 0]);
    // The last step was 29 days ago: the window still holds both.
    clock += DRIFT_BOUNDS.retentionMs - DAY;
    expect((await score()).window.deltas).toEqual([0.5, 0, 0]);
    // Nothing moved it for the retention: the bad step weighs on nothing any more, read (a dry run,
    // which prunes nothing) or scored.
    clock += DRIFT_BOUNDS.retentionMs;
    expect(
      (await omip.project({ entity_id: 'sovereign-a', room: 'default', plan: good }, caller)).window.deltas,
    ).toEqual([0]);
    const after = await score();
    expect(after.window.deltas).toEqual([0]);
    expect(after.delta_window).toBe(0);
    expect(pruned).toEqual([start, start + 30_000 + DRIFT_BOUNDS.retentionMs - DAY, clock]);
  });

  it("reads a citizen once when it scores with its passport: the passport's check tells the score it is registered", async () => {
    const store = openMemoryStore();
    const passport = newPassport();
    const memberId = newId();
    await store.citizens.add({
      memberId,
      name: 'window-reader',
      class: 'agent',
      purpose: 'score my own plans',
      status: 'trillionaire',
      joinedAt: new Date().toISOString(),
      passportHash: hashPassport(passport),
    });
    const reads: string[] = [];
    const get = store.citizens.get;
    store.citizens.get = async (id) => (reads.push(id), get(id));
    const omip = createOmip({ store, constitution, signer: await openLogSigner(null) });
    const own = { passport, client: '203.0.113.9' };
    const answer = await omip.score({ entity_id: memberId, room: 'default', plan: good }, own);
    // Registered (no identity_continuity failure), on the citizen's own window, one read.
    expect(answer.failed_predicates).toEqual([]);
    expect(reads).toEqual([memberId]);
    await omip.project({ entity_id: memberId, room: 'default', plan: good }, own);
    expect(reads).toEqual([memberId, memberId]);
    // Without a passport the score asks once whether the entity is registered.
    await omip.score({ entity_id: memberId, room: 'default', plan: good }, caller);
    expect(reads).toEqual([memberId, memberId, memberId]);
  });
});
