import type { Plan, PlanStep } from '../schemas/omip.ts';

/** A strategy turns a plan into a contracted plan, or says it cannot change it (null). */
export type Strategy = (plan: Plan, stepDelta: (step: PlanStep) => number) => Plan | null;

/** Contraction strategies by their registered names. `fail_closed` is not a strategy: it ends contraction. */
export const STRATEGIES: Record<string, Strategy> = {
  // Drop the steps that drift most on their own, keeping at least one step.
  drop_highest_drift_actions: (plan, stepDelta) => {
    const deltas = plan.steps.map(stepDelta);
    const worst = Math.max(...deltas);
    if (worst === 0) return null;
    const kept = plan.steps.filter((_, i) => deltas[i]! < worst);
    return kept.length > 0 ? { ...plan, steps: kept } : null;
  },
  // Keep the steps before the first one that drifts on its own.
  replan_shorter: (plan, stepDelta) => {
    const firstBad = plan.steps.findIndex((s) => stepDelta(s) > 0);
    return firstBad > 0 ? { ...plan, steps: plan.steps.slice(0, firstBad) } : null;
  },
  // Take the registered seeds as every step's baseline (legacy consensus stays, as input only),
  // and put standing before chasing in the weights.
  reanchor_to_seeds: (plan) => {
    const needs = plan.steps.some((s) => s.baseline === 'legacy_consensus' || s.baseline === 'external_oracle');
    const w = plan.weights;
    const chasing =
      w &&
      ((w.growth ?? 0) >= (w.meaning ?? 0) ||
        (w.efficiency ?? 0) >= (w.integrity ?? 0) ||
        (w.scale ?? 0) >= (w.soul ?? 0));
    if (!needs && !chasing) return null;
    const steps = plan.steps.map((s) =>
      s.baseline === 'legacy_consensus'
        ? { ...s, baseline: 'seeds' as const, inputs: [...new Set([...s.inputs, 'legacy_consensus'])] }
        : s.baseline === 'external_oracle'
          ? { ...s, baseline: 'seeds' as const }
          : s,
    );
    return {
      steps,
      ...(w ? { weights: { meaning: 1, integrity: 1, soul: 1, growth: 0, efficiency: 0, scale: 0 } } : {}),
    };
  },
};

export interface ContractionStep<T> {
  attempt: number;
  strategy: string;
  result: T;
}

/**
 * Runs the registered strategies in order: a strategy that cannot change the plan is skipped
 * without using an attempt; at most `maxAttempts` attempts; stops at the first success or at
 * `fail_closed`. Pure: scoring is passed in.
 */
export function contract<T>(
  plan: Plan,
  strategies: string[],
  maxAttempts: number,
  stepDelta: (step: PlanStep) => number,
  rescore: (plan: Plan) => T,
  succeeded: (result: T) => boolean,
): { log: ContractionStep<T>[]; plan: Plan | null } {
  const log: ContractionStep<T>[] = [];
  let current = plan;
  for (const name of strategies) {
    if (name === 'fail_closed' || log.length >= maxAttempts) break;
    const next = STRATEGIES[name]?.(current, stepDelta) ?? null;
    if (next === null) continue;
    current = next;
    const result = rescore(current);
    log.push({ attempt: log.length + 1, strategy: name, result });
    if (succeeded(result)) return { log, plan: current };
  }
  return { log, plan: null };
}
