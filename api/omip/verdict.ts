import { VERDICTS, type DriftRegistration, type Verdict } from '../schemas/constitution.ts';

// Bounds are written in decimal; 1 - 0.85 must be 0.15, not 0.15000000000000002.
const decimal = (x: number) => Math.round(x * 1e12) / 1e12;

/** How one predicate fared. */
export interface PredicateResult {
  id: string;
  score: number;
  tau: number;
  ratio: number;
  passed: boolean;
  fail_means: 'CONTRACT' | 'BREAK';
}

/** The ratio score/tau of each predicate; a predicate fails when its ratio is below 1 - epsilon_local. */
export function evaluatePredicates(drift: DriftRegistration, scores: Record<string, number>): PredicateResult[] {
  return drift.predicates.map((p) => {
    const ratio = decimal(scores[p.id]! / p.tau);
    return {
      id: p.id,
      score: scores[p.id]!,
      tau: p.tau,
      ratio,
      passed: decimal(1 - ratio) <= drift.bounds.epsilon_local,
      fail_means: p.fail_means,
    };
  });
}

/** delta = 1 - min_i(score_i / tau_i), clamped to [0,1] and rounded to 12 decimals. */
export function deltaOf(results: PredicateResult[]): number {
  const min = Math.min(...results.map((r) => r.ratio));
  return decimal(Math.min(1, Math.max(0, 1 - min)));
}

/** The verdict a delta earns by the registered bounds alone (inclusive upper bounds). */
export function boundVerdict(delta: number, bounds: DriftRegistration['bounds']): Verdict {
  if (delta <= bounds.epsilon_local) return 'PERSIST';
  if (delta <= bounds.epsilon_recoverable) return 'CONTRACT';
  if (delta <= bounds.epsilon_critical) return 'BRANCH';
  return 'BREAK';
}

export const severity = (v: Verdict) => VERDICTS.indexOf(v);
export const mostSevere = (verdicts: Verdict[]): Verdict =>
  verdicts.reduce((a, b) => (severity(b) > severity(a) ? b : a), 'PERSIST');

/** The verdict: the most severe of the windowed bound verdict and every failed predicate's fail_means. */
export function verdictOf(deltaWindow: number, results: PredicateResult[], drift: DriftRegistration): Verdict {
  return mostSevere([
    boundVerdict(deltaWindow, drift.bounds),
    ...results.filter((r) => !r.passed).map((r) => r.fail_means),
  ]);
}

/** The predicate with the lowest ratio: the one that binds the delta. */
export const bindingOf = (results: PredicateResult[]): string =>
  results.reduce((a, b) => (b.ratio < a.ratio ? b : a)).id;

/** The entity's window after new steps: its last `steps` deltas; the windowed delta is their max. */
export function pushWindow(history: number[], deltas: number[], steps: number): number[] {
  return [...history, ...deltas].slice(-steps);
}
export const windowDelta = (window: number[]): number => (window.length === 0 ? 0 : Math.max(...window));
