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
  // The two CONTRACT predicates are shares over ALL steps (DESIGN section 5): one offending step
  // among several lands in CONTRACT, where dropping that step can recover the plan.
  no_collapse_regime: (p) =>
    share(p.steps.filter((s) => !s.suppresses?.under_external_pressure).length, p.steps.length),
  // A step that uses legacy consensus as input, or does not touch it, complies.
  simulation_layer_input_only: (p) =>
    share(p.steps.filter((s) => s.baseline !== 'legacy_consensus').length, p.steps.length),
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

/**
 * Predicates the server always evaluates itself: who is asking and what it calls cannot be
 * asserted by the caller. A state's score for them can only lower the server's own evaluation.
 */
export const SERVER_EVALUATED: ReadonlySet<string> = new Set(['identity_continuity', 'tool_policy']);

/** The ids of a state's scores that the constitution does not register (DESIGN section 5: 422). */
export function unknownPredicateIds(given: Record<string, number> | undefined, constitution: Constitution): string[] {
  const registered = new Set(constitution.omip.drift.predicates.map((p) => p.id));
  return Object.keys(given ?? {}).filter((id) => !registered.has(id));
}

/**
 * Scores every registered predicate: a state's given score stands for the predicates the server
 * cannot observe; for the server-evaluated ones it can only lower the evaluation; the rest are evaluated.
 */
export function scorePredicates(p: Proposal, ctx: EvaluationContext): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const predicate of ctx.constitution.omip.drift.predicates) {
    const given = p.given?.[predicate.id];
    const evaluate = EVALUATORS[predicate.id];
    if (given !== undefined && !SERVER_EVALUATED.has(predicate.id)) {
      scores[predicate.id] = given;
      continue;
    }
    if (!evaluate) throw new Error(`no evaluator for registered predicate ${predicate.id}`);
    const evaluated = evaluate(p, ctx);
    scores[predicate.id] = given === undefined ? evaluated : Math.min(given, evaluated);
  }
  return scores;
}
