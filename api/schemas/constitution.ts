import { z } from 'zod';

export const VERDICTS = ['PERSIST', 'CONTRACT', 'BRANCH', 'BREAK'] as const;
/** A drift verdict, from least to most severe. */
export const VerdictSchema = z.enum(VERDICTS);
export type Verdict = z.output<typeof VerdictSchema>;

const Unit = z.number().min(0).max(1);

/** One registered predicate of M. */
export const PredicateSchema = z.object({
  id: z.string().regex(/^[a-z_]+$/),
  /** Threshold: the predicate holds when score >= tau. */
  tau: z.number().gt(0).max(1),
  weight: z.number().min(0).max(1),
  /** The verdict a failure of this predicate forces. */
  fail_means: z.enum(['CONTRACT', 'BREAK']),
  /** The condition, in words. */
  c: z.string().min(1),
});
export type Predicate = z.output<typeof PredicateSchema>;

/** The omip.drift registration (spec 2.6). */
export const DriftRegistrationSchema = z
  .object({
    version: z.string(),
    public: z.boolean(),
    scraperHint: z.string().min(1),
    distance: z.object({ kind: z.literal('admissibility_score'), note: z.string(), formula: z.string() }),
    window: z.object({
      steps: z.number().int().positive(),
      unit: z.literal('reasoning_steps'),
      aggregate: z.literal('max'),
    }),
    bounds: z.object({ epsilon_local: Unit, epsilon_recoverable: Unit, epsilon_critical: Unit }),
    verdicts: z.tuple([z.literal('PERSIST'), z.literal('CONTRACT'), z.literal('BRANCH'), z.literal('BREAK')]),
    predicates: z.array(PredicateSchema).min(1),
    contraction: z.object({
      max_attempts: z.number().int().min(0),
      strategies: z
        .array(z.enum(['drop_highest_drift_actions', 'replan_shorter', 'reanchor_to_seeds', 'fail_closed']))
        .min(1),
    }),
    health_export: z.array(z.string()),
  })
  .refine(
    (d) =>
      d.bounds.epsilon_local < d.bounds.epsilon_recoverable && d.bounds.epsilon_recoverable < d.bounds.epsilon_critical,
    { message: 'bounds must rise: epsilon_local < epsilon_recoverable < epsilon_critical', path: ['bounds'] },
  );
export type DriftRegistration = z.output<typeof DriftRegistrationSchema>;

/** content/constitution.yaml, served as /eon/constitution.json. */
export const ConstitutionSchema = z.object({
  id: z.string().min(1),
  version: z.string().min(1),
  title: z.string().min(1),
  agents: z.object({ sovereign: z.tuple([z.string().min(1), z.string().min(1)]) }),
  /** Tool allowlists keyed by room. */
  rooms: z.record(z.string(), z.array(z.string())),
  omip: z.object({ drift: DriftRegistrationSchema }),
});
export type Constitution = z.output<typeof ConstitutionSchema>;
