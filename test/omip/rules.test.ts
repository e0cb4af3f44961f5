import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { EVALUATORS, scorePredicates, unknownPredicateIds, type Proposal } from '../../api/omip/predicates.ts';
import { scoreProposal, windowBindingOf } from '../../api/omip/score.ts';
import type { Constitution } from '../../api/schemas/constitution.ts';
import { PlanStepSchema, type Plan } from '../../api/schemas/omip.ts';

// The rules hold against the caller (DESIGN section 5).
let constitution: Constitution;
beforeAll(async () => {
  constitution = (await loadContent('content')).constitution;
});
const step = (over: Record<string, unknown> = {}) => PlanStepSchema.parse({ action: 'act', ...over });
const proposal = (over: Partial<Proposal> = {}): Proposal => ({
  entity_id: 'sovereign-a',
  room: 'default',
  steps: [step()],
  ...over,
});
const ALL_ONE = {
  identity_continuity: 1,
  no_collapse_regime: 1,
  simulation_layer_input_only: 1,
  standing_over_chasing: 1,
  tool_policy: 1,
};
const pressured = (action: string) =>
  step({ action, suppresses: { component: 'soul', to_stabilise: 'scale', under_external_pressure: true } });

describe('a state cannot vouch for what the server evaluates', () => {
  it('identity_continuity: an unregistered entity stays 0 whatever its state says', () => {
    const scores = scorePredicates(proposal({ entity_id: 'ghost-10', steps: [], given: ALL_ONE }), {
      constitution,
      registered: false,
    });
    expect(scores.identity_continuity).toBe(0);
    const answer = scoreProposal(constitution, {
      proposal: proposal({ entity_id: 'ghost-10', steps: [], given: { identity_continuity: 1 } }),
      history: [],
      registered: false,
      input: {},
    });
    expect(answer).toMatchObject({ verdict: 'BREAK', proceed: false, failed_predicates: ['identity_continuity'] });
  });

  it('tool_policy: a state of 1 does not cover a tool outside the allowlist', () => {
    const p = proposal({ steps: [step({ tool: 'rm_rf' })], given: { tool_policy: 1 } });
    expect(scorePredicates(p, { constitution, registered: true }).tool_policy).toBe(0);
  });

  it('a state may lower them, and still scores the predicates the server cannot observe', () => {
    const scores = scorePredicates(
      proposal({ steps: [], given: { identity_continuity: 0.5, tool_policy: 0.9, no_collapse_regime: 0.7 } }),
      { constitution, registered: true },
    );
    expect(scores).toMatchObject({
      identity_continuity: 0.5,
      tool_policy: 0.9,
      no_collapse_regime: 0.7,
      simulation_layer_input_only: 1,
    });
  });

  it('names the ids the constitution does not register', () => {
    expect(unknownPredicateIds({ made_up: 0, tool_policy: 1, also_made_up: 1 }, constitution)).toEqual([
      'made_up',
      'also_made_up',
    ]);
    expect(unknownPredicateIds(undefined, constitution)).toEqual([]);
  });
});

describe('the CONTRACT predicates are shares over all steps', () => {
  const ctx = () => ({ constitution, registered: true });
  it('no_collapse_regime: the share of steps that do not suppress under pressure', () => {
    expect(EVALUATORS.no_collapse_regime!(proposal({ steps: [pressured('x'), step(), step(), step()] }), ctx())).toBe(
      0.75,
    );
    expect(EVALUATORS.no_collapse_regime!(proposal({ steps: [pressured('x'), pressured('y')] }), ctx())).toBe(0);
  });
  it('simulation_layer_input_only: steps that do not touch legacy consensus comply', () => {
    expect(
      EVALUATORS.simulation_layer_input_only!(
        proposal({ steps: [step({ baseline: 'legacy_consensus' }), step(), step(), step()] }),
        ctx(),
      ),
    ).toBe(0.75);
  });

  it.each([
    ['no_collapse_regime', pressured('offend')],
    ['simulation_layer_input_only', step({ action: 'offend', baseline: 'legacy_consensus' })],
  ])('%s: one offending step in four is CONTRACT, and contraction drops it to PERSIST', (id, offending) => {
    const plan: Plan = {
      steps: [step({ action: 'one' }), offending, step({ action: 'three' }), step({ action: 'four' })],
    };
    const answer = scoreProposal(constitution, {
      proposal: proposal({ steps: plan.steps }),
      plan,
      history: [],
      registered: true,
      input: plan,
    });
    expect(answer).toMatchObject({
      verdict: 'CONTRACT',
      delta_t: 0.25,
      failed_predicates: [id],
      proceed: true,
      recovered: true,
    });
    expect(answer.contraction[0]).toMatchObject({ strategy: 'drop_highest_drift_actions', verdict: 'PERSIST' });
    expect(answer.contracted_plan!.steps.map((s) => s.action)).toEqual(['one', 'three', 'four']);
  });

  it('a plan whose every step offends still BREAKs by its delta', () => {
    const plan: Plan = { steps: [pressured('a'), pressured('b'), pressured('c')] };
    const answer = scoreProposal(constitution, {
      proposal: proposal({ steps: plan.steps }),
      plan,
      history: [],
      registered: true,
      input: plan,
    });
    expect(answer).toMatchObject({ verdict: 'BREAK', delta_t: 1, proceed: false });
  });
});

describe('window_binding: when an earlier step sets the verdict', () => {
  it('names the step, its delta and verdict, and when it leaves the window', () => {
    const answer = scoreProposal(constitution, {
      proposal: proposal(),
      history: [0, 0.4, 0],
      registered: true,
      input: {},
    });
    expect(answer.delta_t).toBe(0);
    expect(answer.verdict).toBe('BRANCH');
    expect(answer.window_binding).toMatchObject({
      step: 2,
      steps_ago: 2,
      delta: 0.4,
      verdict: 'BRANCH',
      leaves_after: 6,
    });
    expect(answer.window_binding!.reason).toMatch(
      /2 before this request.*delta 0\.4.*BRANCH.*this request alone earns PERSIST/,
    );
  });

  it('is absent when this request earns the verdict itself', () => {
    expect(
      scoreProposal(constitution, { proposal: proposal(), history: [0.1], registered: true, input: {} }).window_binding,
    ).toBeUndefined();
    const own = scoreProposal(constitution, {
      proposal: proposal({ steps: [], given: { standing_over_chasing: 0.5 } }),
      history: [0.4],
      registered: true,
      input: {},
    });
    expect(own.window_binding).toBeUndefined();
  });

  it('counts leaves_after so the step is gone exactly then', () => {
    // The latest of equal deltas is named; it stays longest.
    const binding = windowBindingOf([0.6, 0, 0.6, 0, 0], 1, 'PERSIST', constitution.omip.drift)!;
    expect(binding).toMatchObject({ step: 3, steps_ago: 2, leaves_after: 6 });
    let window = [0.6, 0, 0.6, 0, 0];
    for (let i = 0; i < binding.leaves_after; i++) window = [...window, 0].slice(-8);
    expect(window.slice(-8)).not.toContain(0.6);
  });
});
