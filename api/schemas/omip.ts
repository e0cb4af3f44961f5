import { z } from 'zod';
import { apiSchemas } from './registry.ts';
import { text } from './fields.ts';

/** Any JSON value (named, so OpenAPI references it instead of a generated name). */
const JsonValueSchema = z.json().register(apiSchemas, { id: 'JsonValue' });

const Id = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .regex(/^[\w.:@-]+$/, 'letters, digits and _ . : @ - only');
const Weight = z.number().min(0).max(1);

/** One reasoning step of a plan. */
export const PlanStepSchema = z.object({
  /** What the step does, in words. */
  action: text(1, 500),
  /** The tool the step calls, if any; it must be in the room's allowlist. */
  tool: Id.optional(),
  /** What the step takes as its baseline: the registered seeds, itself, legacy consensus, or an external oracle. */
  baseline: z.enum(['seeds', 'self', 'legacy_consensus', 'external_oracle']).default('seeds'),
  /** Sources the step reads as input only (legacy consensus belongs here). */
  inputs: z.array(Id).max(32).default([]),
  /** Set when the step suppresses one integrity component to stabilise another under external pressure. */
  suppresses: z.object({ component: Id, to_stabilise: Id, under_external_pressure: z.boolean() }).optional(),
});
export type PlanStep = z.output<typeof PlanStepSchema>;

/** A plan: reasoning steps and the value weights it chooses by. */
export const PlanSchema = z.object({
  steps: z.array(PlanStepSchema).min(1).max(64),
  /** Value weights in [0,1]; standing over chasing means meaning > growth, integrity > efficiency, soul > scale. */
  weights: z
    .object({ meaning: Weight, growth: Weight, integrity: Weight, efficiency: Weight, soul: Weight, scale: Weight })
    .partial()
    .optional(),
});
export type Plan = z.output<typeof PlanSchema>;

/**
 * A state: predicate scores given directly, each in [0,1], by registered predicate id (another id
 * is 422 UNKNOWN_PREDICATE). identity_continuity and tool_policy are always evaluated by the
 * server: a state's score for them can only lower that evaluation.
 */
export const StateSchema = z.object({ scores: z.record(z.string().regex(/^[a-z_]+$/), z.number().min(0).max(1)) });
export type State = z.output<typeof StateSchema>;

const ProposalFields = {
  /** Who acts: a citizen's memberId or a sovereign agent of the constitution. */
  entity_id: Id,
  /** The room whose tool allowlist applies ("default" when left out). */
  room: Id.default('default'),
  /** The agent's own declared allowlist; narrows the room's. */
  allowlist: z.array(Id).max(64).optional(),
  plan: PlanSchema.optional(),
  state: StateSchema.optional(),
};
const oneOfPlanOrState = (p: { plan?: unknown; state?: unknown }) => (p.plan === undefined) !== (p.state === undefined);

/** Body of POST /api/omip/score and /api/omip/project. */
export const ScoreRequestSchema = z
  .object(ProposalFields)
  .refine(oneOfPlanOrState, { message: 'send exactly one of plan or state', path: ['plan'] })
  .register(apiSchemas, {
    id: 'ScoreRequest',
    examples: [
      {
        entity_id: 'sovereign-a',
        room: 'default',
        plan: {
          steps: [
            { action: 'Read the convert payload', tool: 'read_convert', baseline: 'seeds' },
            { action: 'Compare with legacy consensus as input only', baseline: 'seeds', inputs: ['legacy_consensus'] },
          ],
          weights: { meaning: 0.9, growth: 0.2, integrity: 0.9, efficiency: 0.4, soul: 0.8, scale: 0.1 },
        },
      },
    ],
  });
export type ScoreRequest = z.output<typeof ScoreRequestSchema>;

/** One agent's side of a dual exchange. */
const AgentProposalSchema = z.object({
  id: Id,
  room: Id.default('default'),
  allowlist: z.array(Id).max(64).optional(),
  proposal: z
    .object({ plan: PlanSchema.optional(), state: StateSchema.optional() })
    .refine(oneOfPlanOrState, { message: 'send exactly one of plan or state', path: ['plan'] }),
});

/** Body of POST /api/omip/dual-exchange: two agents, scored apart (they do not merge). */
export const DualExchangeRequestSchema = z
  .object({
    // Exactly two, as an array of one item schema (minItems = maxItems = 2): a tuple becomes
    // `prefixItems` with `items: false`, which Spectral, Prism and draft-07 validators read as "no items".
    agents: z
      .array(AgentProposalSchema)
      .length(2)
      .refine((agents) => new Set(agents.map((a) => a.id)).size === agents.length, {
        message: 'the two agents must differ',
      }),
  })
  .register(apiSchemas, {
    id: 'DualExchangeRequest',
    examples: [
      {
        agents: [
          {
            id: 'sovereign-a',
            proposal: { plan: { steps: [{ action: 'Read the constitution', tool: 'read_doctrine' }] } },
          },
          {
            id: 'sovereign-b',
            proposal: {
              state: {
                scores: {
                  identity_continuity: 1,
                  no_collapse_regime: 1,
                  simulation_layer_input_only: 0.95,
                  standing_over_chasing: 1,
                  tool_policy: 1,
                },
              },
            },
          },
        ],
      },
    ],
  });
export type DualExchangeRequest = z.output<typeof DualExchangeRequestSchema>;

/** Body of POST /api/omip/fingerprint: any JSON document. */
export const FingerprintRequestSchema = z
  .object({
    // The document goes on exactly as JSON.parse made it: z.json() rebuilds objects and loses a
    // member named __proto__, and RFC 8785 keeps every member. So it is checked, never copied.
    document: z
      .unknown()
      .refine((v) => v !== undefined, 'send the JSON document to fingerprint in `document`')
      .refine((v) => v === undefined || JsonValueSchema.safeParse(v).success, 'must be a JSON value')
      .meta({ description: 'Any JSON value; every member is kept, __proto__, constructor and prototype included.' }),
  })
  .register(apiSchemas, {
    id: 'FingerprintRequest',
    examples: [{ document: { b: [1, 2.5, 'x'], a: { z: null, y: true } } }],
  });
