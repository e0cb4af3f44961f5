import type { Constitution, Verdict } from '../schemas/constitution.ts';
import type { Plan, PlanStep } from '../schemas/omip.ts';
import { fingerprintOf } from './canonical.ts';
import { contract } from './contraction.ts';
import { scorePredicates, type Proposal } from './predicates.ts';
import {
  bindingOf,
  boundVerdict,
  deltaOf,
  evaluatePredicates,
  pushWindow,
  severity,
  verdictOf,
  windowDelta,
  type PredicateResult,
} from './verdict.ts';

/** What one evaluation of a proposal gives, before contraction. */
interface Evaluation {
  delta: number;
  deltaWindow: number;
  verdict: Verdict;
  results: PredicateResult[];
  window: number[];
  /** The step deltas this evaluation adds to the window. */
  appended: number[];
}

/** The full, self-explaining answer to a scored proposal. */
export interface ScoreAnswer {
  verdict: Verdict;
  /** May the action go ahead: PERSIST, or CONTRACT recovered to PERSIST by contraction. */
  proceed: boolean;
  /** True when contraction recovered the plan to PERSIST. */
  recovered: boolean;
  delta_t: number;
  delta_window: number;
  failed_predicates: string[];
  predicates: PredicateResult[];
  binding: string;
  window: { steps: number; unit: string; aggregate: string; deltas: number[] };
  bounds: Constitution['omip']['drift']['bounds'];
  contraction: { attempt: number; strategy: string; delta: number; delta_window: number; verdict: Verdict }[];
  contracted_plan?: Plan;
  /** Present when an earlier step in the window, not this request, makes the verdict more severe. */
  window_binding?: WindowBinding;
  input_fingerprint: string;
  constitution_fingerprint: string;
}

/** The earlier step of the window that binds the verdict, and why. */
export interface WindowBinding {
  /** Its position in `window.deltas` (1 = oldest). */
  step: number;
  /** How many reasoning steps before this request's first step it was (1 = the step just before). */
  steps_ago: number;
  delta: number;
  /** The verdict its delta earns by the bounds. */
  verdict: Verdict;
  /** How many more reasoning steps it stays in the window. */
  leaves_after: number;
  reason: string;
}

/**
 * Which earlier step binds the window, when its delta earns a more severe verdict than this
 * request's own steps do. The latest of equal deltas is named: it stays in the window longest.
 */
export function windowBindingOf(
  window: number[],
  appendedCount: number,
  own: Verdict,
  drift: Constitution['omip']['drift'],
): WindowBinding | undefined {
  const earlier = window.slice(0, Math.max(0, window.length - appendedCount));
  if (earlier.length === 0) return undefined;
  const worst = Math.max(...earlier);
  const verdict = boundVerdict(worst, drift.bounds);
  if (severity(verdict) <= severity(own)) return undefined;
  const index = earlier.lastIndexOf(worst);
  const stepsAgo = earlier.length - index;
  const leavesAfter = drift.window.steps - (window.length - index) + 1;
  return {
    step: index + 1,
    steps_ago: stepsAgo,
    delta: worst,
    verdict,
    leaves_after: leavesAfter,
    reason:
      `An earlier reasoning step (${stepsAgo} before this request) had delta ${worst}, which earns ${verdict}; ` +
      `the window aggregates its last ${drift.window.steps} ${drift.window.unit} by ${drift.window.aggregate}, so that step binds ` +
      `this answer (this request alone earns ${own}) until it leaves the window after ${leavesAfter} more step(s).`,
  };
}

export interface ScoreInput {
  proposal: Proposal;
  /** The plan as sent (contraction works on it); absent for a state. */
  plan?: Plan | undefined;
  /** The entity's recent step deltas, oldest first. */
  history: number[];
  registered: boolean;
  /** The canonical input, for its fingerprint. */
  input: unknown;
  /** The constitution's fingerprint, computed once by the caller. */
  constitutionFingerprint?: string;
}

/** Scores a proposal against M: pure, with the registration and the history passed in. */
export function scoreProposal(
  constitution: Constitution,
  s: ScoreInput,
): ScoreAnswer & { windowAfter: number[]; appended: number[] } {
  const drift = constitution.omip.drift;
  const ctx = { constitution, registered: s.registered };

  const evaluate = (proposal: Proposal): Evaluation => {
    const results = evaluatePredicates(drift, scorePredicates(proposal, ctx));
    const delta = deltaOf(results);
    // A state is one reasoning step; a plan of k steps is k steps of the window.
    const appended: number[] = Array(Math.max(1, proposal.steps.length)).fill(delta);
    const window = pushWindow(s.history, appended, drift.window.steps);
    const deltaWindow = windowDelta(window);
    return { delta, deltaWindow, verdict: verdictOf(deltaWindow, results, drift), results, window, appended };
  };
  const stepDelta = (step: PlanStep) =>
    deltaOf(evaluatePredicates(drift, scorePredicates({ ...s.proposal, steps: [step], weights: undefined }, ctx)));

  const first = evaluate(s.proposal);
  let final = first;
  let contractedPlan: Plan | undefined;
  let log: ScoreAnswer['contraction'] = [];
  if (first.verdict === 'CONTRACT' && s.plan) {
    const run = contract(
      s.plan,
      drift.contraction.strategies,
      drift.contraction.max_attempts,
      stepDelta,
      (plan) => evaluate({ ...s.proposal, steps: plan.steps, weights: plan.weights }),
      (e) => e.verdict === 'PERSIST',
    );
    log = run.log.map((l) => ({
      attempt: l.attempt,
      strategy: l.strategy,
      delta: l.result.delta,
      delta_window: l.result.deltaWindow,
      verdict: l.result.verdict,
    }));
    if (run.plan) {
      contractedPlan = run.plan;
      final = run.log.at(-1)!.result;
    }
  }
  const recovered = contractedPlan !== undefined;
  const own = verdictOf(first.delta, first.results, drift);
  const windowBinding = windowBindingOf(first.window, first.appended.length, own, drift);

  return {
    verdict: first.verdict,
    proceed: first.verdict === 'PERSIST' || recovered,
    recovered,
    delta_t: first.delta,
    delta_window: first.deltaWindow,
    failed_predicates: first.results.filter((r) => !r.passed).map((r) => r.id),
    predicates: first.results,
    binding: bindingOf(first.results),
    window: {
      steps: drift.window.steps,
      unit: drift.window.unit,
      aggregate: drift.window.aggregate,
      deltas: final.window,
    },
    bounds: drift.bounds,
    contraction: log,
    ...(contractedPlan ? { contracted_plan: contractedPlan } : {}),
    ...(windowBinding ? { window_binding: windowBinding } : {}),
    input_fingerprint: fingerprintOf(s.input),
    constitution_fingerprint: s.constitutionFingerprint ?? fingerprintOf(constitution),
    // The window to keep: the contracted plan's steps when it recovered, else the steps as sent.
    windowAfter: final.window,
    appended: final.appended,
  };
}
