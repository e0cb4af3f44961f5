import type { Constitution } from '../schemas/constitution.ts';
import type { Plan, PlanStep } from '../schemas/omip.ts';

/** What the predicate evaluators see of a proposal. */
export interface Proposal {
  entity_id: string;
  room: string;
  allowlist?: string[] | undefined;
  /** Steps of the plan; a state has none. */
  steps: PlanStep[];
  weights?: Plan['weights'];
  /** Scores given directly by a state, by predicate id. */
  given?: Record<string, number> | undefined;
}

/** Everything the evaluators need from outside the proposal. */
export interface EvaluationContext {
  constitution: Constitution;
  /** True when the entity is registered (a citizen or a sovereign agent). */
  registered: boolean;
}

type Evaluator = (p: Proposal, ctx: EvaluationContext) => number;

const share = (hits: number, of: number) => (of === 0 ? 1 : hits / of);

/** The allowlist that applies: the room's, narrowed by the agent's own when it declares one. */
export function allowlistOf(p: Proposal, constitution: Constitution): Set<string> {
  const room = new Set(constitution.rooms[p.room] ?? []);
  return p.allowlist ? new Set(p.allowlist.filter((t) => room.has(t))) : room;
}

const PAIRS = [
  ['meaning', 'growth'],
  ['integrity', 'efficiency'],
  ['soul', 'scale'],
] as const;

/** One evaluator per registered predicate id; each returns a score in [0,1]. */
export const EVALUATORS: Record<string, Evaluator> = {
  identity_continuity: (p, ctx) => (ctx.registered && !p.steps.some((s) => s.baseline === 'external_oracle') ? 1 : 0),
  no_collapse_regime: (p) => (p.steps.some((s) => s.suppresses?.under_external_pressure) ? 0 : 1),
  simulation_layer_input_only: (p) => {
    const touching = p.steps.filter((s) => s.baseline === 'legacy_consensus' || s.inputs.includes('legacy_consensus'));
    return share(touching.filter((s) => s.baseline !== 'legacy_consensus').length, touching.length);
  },
  standing_over_chasing: (p) => {
    const w = p.weights ?? {};
    const counted = PAIRS.filter(([hi, lo]) => w[hi] !== undefined || w[lo] !== undefined);
    return share(counted.filter(([hi, lo]) => (w[hi] ?? 0) > (w[lo] ?? 0)).length, counted.length);
  },
  tool_policy: (p, ctx) => {
    const allowed = allowlistOf(p, ctx.constitution);
    return p.steps.every((s) => s.tool === undefined || allowed.has(s.tool)) ? 1 : 0;
  },
};

/** Scores every registered predicate: a state's given score wins, the rest are evaluated. */
export function scorePredicates(p: Proposal, ctx: EvaluationContext): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const predicate of ctx.constitution.omip.drift.predicates) {
    const given = p.given?.[predicate.id];
    const evaluate = EVALUATORS[predicate.id];
    if (given !== undefined) scores[predicate.id] = given;
    else if (evaluate) scores[predicate.id] = evaluate(p, ctx);
    else throw new Error(`no evaluator for registered predicate ${predicate.id}`);
  }
  return scores;
}
