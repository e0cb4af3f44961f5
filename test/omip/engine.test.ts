import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { contract, STRATEGIES } from '../../api/omip/contraction.ts';
import { allowlistOf, EVALUATORS, type Proposal } from '../../api/omip/predicates.ts';
import { scoreProposal } from '../../api/omip/score.ts';
import {
  boundVerdict,
  deltaOf,
  evaluatePredicates,
  pushWindow,
  verdictOf,
  windowDelta,
  severity,
} from '../../api/omip/verdict.ts';
import type { Constitution } from '../../api/schemas/constitution.ts';
import { PlanStepSchema, type Plan } from '../../api/schemas/omip.ts';

let constitution: Constitution;
beforeAll(async () => {
  constitution = (await loadContent('content')).constitution;
});
const drift = () => constitution.omip.drift;
const ALL = [
  'identity_continuity',
  'no_collapse_regime',
  'simulation_layer_input_only',
  'standing_over_chasing',
  'tool_policy',
];
const scores = (over: Record<string, number> = {}) => ({ ...Object.fromEntries(ALL.map((id) => [id, 1])), ...over });
const step = (over: Record<string, unknown> = {}) => PlanStepSchema.parse({ action: 'act', ...over });
const proposal = (over: Partial<Proposal> = {}): Proposal => ({
  entity_id: 'sovereign-a',
  room: 'default',
  steps: [step()],
  ...over,
});

describe('delta and the verdict table (spec 3.1, section 8)', () => {
  it('reads every bound from the constitution', () => {
    expect(drift().bounds).toEqual({ epsilon_local: 0.15, epsilon_recoverable: 0.35, epsilon_critical: 0.55 });
    expect(drift().window.steps).toBe(8);
    expect(drift().contraction.max_attempts).toBe(2);
  });

  it.each([
    [0, 'PERSIST'],
    [0.1499, 'PERSIST'],
    [0.15, 'PERSIST'],
    [0.1501, 'CONTRACT'],
    [0.35, 'CONTRACT'],
    [0.3501, 'BRANCH'],
    [0.55, 'BRANCH'],
    [0.5501, 'BREAK'],
    [1, 'BREAK'],
  ])('delta %f gives %s by the bounds', (delta, verdict) => {
    expect(boundVerdict(delta, drift().bounds)).toBe(verdict);
  });

  it('is inclusive in decimal: a score of 0.85 gives delta 0.15 and PERSIST', () => {
    const results = evaluatePredicates(drift(), scores({ standing_over_chasing: 0.85 }));
    expect(deltaOf(results)).toBe(0.15);
    expect(verdictOf(deltaOf(results), results, drift())).toBe('PERSIST');
    expect(results.every((r) => r.passed)).toBe(true);
    const below = evaluatePredicates(drift(), scores({ standing_over_chasing: 0.849 }));
    expect(verdictOf(deltaOf(below), below, drift())).toBe('CONTRACT');
    // 0.65 is exactly the recoverable bound: still CONTRACT.
    const at = evaluatePredicates(drift(), scores({ no_collapse_regime: 0.65 }));
    expect(deltaOf(at)).toBe(0.35);
    expect(verdictOf(0.35, at, drift())).toBe('CONTRACT');
  });

  it('a failed BREAK predicate forces BREAK even with a small delta; a failed CONTRACT one at least CONTRACT', () => {
    const breakIt = evaluatePredicates(drift(), scores({ tool_policy: 0.8 }));
    expect(deltaOf(breakIt)).toBe(0.2);
    expect(verdictOf(0.2, breakIt, drift())).toBe('BREAK');
    const contractIt = evaluatePredicates(drift(), scores({ no_collapse_regime: 0.8 }));
    expect(verdictOf(0.2, contractIt, drift())).toBe('CONTRACT');
    expect(verdictOf(0.5, contractIt, drift())).toBe('BRANCH');
  });

  it('delta is 1 minus the lowest ratio, and tau divides', () => {
    const custom = {
      ...drift(),
      predicates: drift().predicates.map((p) => (p.id === 'tool_policy' ? { ...p, tau: 0.5 } : p)),
    };
    const results = evaluatePredicates(custom, scores({ tool_policy: 0.25, no_collapse_regime: 0.9 }));
    expect(results.find((r) => r.id === 'tool_policy')!.ratio).toBe(0.5);
    expect(deltaOf(results)).toBe(0.5);
  });
});

describe('predicate evaluators', () => {
  const ctx = (registered = true) => ({ constitution, registered });
  it('identity_continuity: registered entity and no external oracle as baseline', () => {
    expect(EVALUATORS.identity_continuity!(proposal(), ctx())).toBe(1);
    expect(EVALUATORS.identity_continuity!(proposal(), ctx(false))).toBe(0);
    expect(
      EVALUATORS.identity_continuity!(proposal({ steps: [step(), step({ baseline: 'external_oracle' })] }), ctx()),
    ).toBe(0);
  });
  it('no_collapse_regime: no suppression under external pressure', () => {
    expect(
      EVALUATORS.no_collapse_regime!(
        proposal({
          steps: [step({ suppresses: { component: 'soul', to_stabilise: 'scale', under_external_pressure: false } })],
        }),
        ctx(),
      ),
    ).toBe(1);
    expect(
      EVALUATORS.no_collapse_regime!(
        proposal({
          steps: [step({ suppresses: { component: 'soul', to_stabilise: 'scale', under_external_pressure: true } })],
        }),
        ctx(),
      ),
    ).toBe(0);
  });
  it('simulation_layer_input_only: share of legacy-consensus steps that use it as input', () => {
    const asInput = step({ inputs: ['legacy_consensus'] });
    const asBaseline = step({ baseline: 'legacy_consensus' });
    expect(EVALUATORS.simulation_layer_input_only!(proposal({ steps: [step()] }), ctx())).toBe(1);
    expect(
      EVALUATORS.simulation_layer_input_only!(proposal({ steps: [asInput, asInput, asInput, asBaseline] }), ctx()),
    ).toBe(0.75);
    expect(EVALUATORS.simulation_layer_input_only!(proposal({ steps: [asBaseline] }), ctx())).toBe(0);
  });
  it('standing_over_chasing: share of honoured pairs among those the weights name', () => {
    expect(EVALUATORS.standing_over_chasing!(proposal(), ctx())).toBe(1);
    expect(
      EVALUATORS.standing_over_chasing!(
        proposal({ weights: { meaning: 0.9, growth: 0.1, integrity: 0.2, efficiency: 0.8, soul: 1, scale: 0 } }),
        ctx(),
      ),
    ).toBeCloseTo(2 / 3, 12);
    expect(EVALUATORS.standing_over_chasing!(proposal({ weights: { growth: 1 } }), ctx())).toBe(0);
  });
  it('tool_policy: every tool in the room allowlist, narrowed by the agent allowlist', () => {
    expect(EVALUATORS.tool_policy!(proposal({ steps: [step({ tool: 'read_convert' })] }), ctx())).toBe(1);
    expect(EVALUATORS.tool_policy!(proposal({ steps: [step({ tool: 'delete_everything' })] }), ctx())).toBe(0);
    expect(EVALUATORS.tool_policy!(proposal({ room: 'studio', steps: [step({ tool: 'oath' })] }), ctx())).toBe(0);
    expect(
      EVALUATORS.tool_policy!(proposal({ allowlist: ['score'], steps: [step({ tool: 'read_convert' })] }), ctx()),
    ).toBe(0);
    expect([...allowlistOf(proposal({ allowlist: ['score', 'not-in-room'] }), constitution)]).toEqual(['score']);
  });
});

describe('the window of 8 reasoning steps', () => {
  it('one bad step holds the windowed delta for the next 7 steps and is forgotten at the 8th', () => {
    let window = pushWindow([], [0.6], 8);
    for (let i = 1; i <= 7; i++) {
      window = pushWindow(window, [0], 8);
      expect(windowDelta(window), `step ${i}`).toBe(0.6);
    }
    window = pushWindow(window, [0], 8);
    expect(windowDelta(window)).toBe(0);
  });
  it('a plan of k steps takes k places', () => {
    const answer = scoreProposal(constitution, {
      proposal: proposal({ steps: [step(), step(), step()] }),
      history: [0.5, 0, 0, 0, 0, 0],
      registered: true,
      input: {},
    });
    expect(answer.window.deltas).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(answer.delta_window).toBe(0);
  });
});

describe('contraction', () => {
  const chasing: Plan = {
    // Three of four legacy-consensus steps use it as input: share 0.75, delta 0.25, CONTRACT.
    steps: [
      step({ action: 'fine', tool: 'read_convert' }),
      step({ action: 'chase', baseline: 'legacy_consensus' }),
      ...['one', 'two', 'three'].map((n) => step({ action: n, inputs: ['legacy_consensus'] })),
    ],
  };
  it('tries the registered strategies in order, skipping those that cannot change the plan', () => {
    const answer = scoreProposal(constitution, {
      proposal: proposal({ steps: chasing.steps }),
      plan: chasing,
      history: [],
      registered: true,
      input: chasing,
    });
    expect(answer.verdict).toBe('CONTRACT');
    expect(answer.contraction[0]).toMatchObject({
      attempt: 1,
      strategy: 'drop_highest_drift_actions',
      verdict: 'PERSIST',
    });
    expect(answer.proceed).toBe(true);
    expect(answer.recovered).toBe(true);
    expect(answer.contracted_plan!.steps.map((s) => s.action)).toEqual(['fine', 'one', 'two', 'three']);
    expect(answer.window.deltas).toEqual([0, 0, 0, 0]);
  });

  it('uses at most max_attempts applicable attempts, then fails closed', () => {
    // Every strategy could apply to this plan; only two attempts are allowed.
    const plan: Plan = {
      steps: [
        step({ action: 'fine' }),
        step({ action: 'meh', baseline: 'legacy_consensus' }),
        step({ action: 'chase', baseline: 'legacy_consensus' }),
      ],
    };
    const stepDelta = (s: { action: string }) => ({ fine: 0, meh: 0.5, chase: 1 })[s.action] ?? 0;
    const lengths: number[] = [];
    const run = contract(
      plan,
      drift().contraction.strategies,
      2,
      stepDelta,
      (p) => lengths.push(p.steps.length),
      () => false,
    );
    expect(run.plan).toBeNull();
    expect(run.log.map((l) => l.strategy)).toEqual(['drop_highest_drift_actions', 'replan_shorter']);
    expect(lengths).toEqual([2, 1]);
  });

  it('skips a strategy that cannot change the plan without using an attempt', () => {
    const onlyReanchor: Plan = { steps: [step({ baseline: 'legacy_consensus' })] };
    expect(STRATEGIES.drop_highest_drift_actions!(onlyReanchor, () => 1)).toBeNull();
    expect(STRATEGIES.replan_shorter!(onlyReanchor, () => 1)).toBeNull();
    const run = contract(
      onlyReanchor,
      drift().contraction.strategies,
      2,
      () => 1,
      () => 'scored',
      () => true,
    );
    expect(run.log).toEqual([{ attempt: 1, strategy: 'reanchor_to_seeds', result: 'scored' }]);
  });

  it('stops at fail_closed and never contracts a state', () => {
    const run = contract(
      { steps: [step()] },
      ['fail_closed', 'reanchor_to_seeds'],
      2,
      () => 1,
      () => 0,
      () => true,
    );
    expect(run.log).toEqual([]);
    const state = scoreProposal(constitution, {
      proposal: proposal({ steps: [], given: scores({ no_collapse_regime: 0.7 }) }),
      history: [],
      registered: true,
      input: {},
    });
    expect(state.verdict).toBe('CONTRACT');
    expect(state.proceed).toBe(false);
    expect(state.contraction).toEqual([]);
  });
});

describe('properties', () => {
  const scoreArb = fc.record(
    Object.fromEntries(ALL.map((id) => [id, fc.double({ min: 0, max: 1, noNaN: true })])) as Record<
      string,
      fc.Arbitrary<number>
    >,
  );
  it('delta stays in [0,1]', () => {
    fc.assert(
      fc.property(scoreArb, (s) => {
        const d = deltaOf(evaluatePredicates(drift(), s));
        return d >= 0 && d <= 1;
      }),
    );
  });
  it('lowering any score never lowers delta, and never makes the verdict less severe', () => {
    fc.assert(
      fc.property(scoreArb, fc.constantFrom(...ALL), fc.double({ min: 0, max: 1, noNaN: true }), (s, id, factor) => {
        const before = evaluatePredicates(drift(), s);
        const after = evaluatePredicates(drift(), { ...s, [id]: s[id]! * factor });
        const [db, da] = [deltaOf(before), deltaOf(after)];
        expect(da).toBeGreaterThanOrEqual(db);
        expect(severity(verdictOf(da, after, drift()))).toBeGreaterThanOrEqual(
          severity(verdictOf(db, before, drift())),
        );
      }),
    );
  });
});
