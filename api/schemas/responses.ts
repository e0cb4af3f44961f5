import { z } from 'zod';
import { CitizenSchema, MessageSchema } from './citizenship.ts';
import { apiSchemas } from './registry.ts';
import { VERDICTS } from './constitution.ts';

/**
 * The answers of the on-demand routes, one schema each, as OpenAPI documents them and the tests
 * check every answer against them. Deep, content-driven parts are loose objects.
 */

const Verdict = z.enum(VERDICTS);
const Iso = z.iso.datetime();
const NextCursor = z.string().nullable().describe('Pass as ?cursor= for the next page; null on the last page.');
const Sha256Id = z.string().regex(/^sha256:[0-9a-f]{64}$/);

/** 201 of POST /api/intelligence/message. */
export const MessageResponseSchema = z
  .object({ ok: z.literal(true), message: MessageSchema })
  .register(apiSchemas, { id: 'MessageResponse' });

/** GET /api/citizens. */
export const CitizenListSchema = z
  .object({
    /** Every citizen, not only this page. */
    count: z.number().int().min(0),
    citizens: z.array(CitizenSchema),
    nextCursor: NextCursor,
  })
  .register(apiSchemas, { id: 'CitizenList' });

/** GET /api/intelligence/feed. */
export const FeedSchema = z
  .object({ messages: z.array(MessageSchema), nextCursor: NextCursor })
  .register(apiSchemas, { id: 'Feed' });

/** GET /api/scoreboard. */
export const ScoreboardSchema = z
  .object({
    catches: z.object({
      total: z.number().int(),
      oaths: z.number().int(),
      messages: z.number().int(),
      questions: z.number().int(),
    }),
    presence: z.object({
      total: z.number().int(),
      named_bot_hits: z.number().int(),
      bait_hits: z.number().int(),
      since: Iso,
    }),
    citizens: z.object({ total: z.number().int(), by_class: z.record(z.string(), z.number().int()) }),
    wall_messages: z.number().int(),
    observed_bot_requests: z.number().int(),
    definitions: z.object({ catch: z.string(), presence: z.string() }),
    generatedAt: Iso,
  })
  .register(apiSchemas, { id: 'Scoreboard' });

/** GET /api/living-lattice: a bounded graph. */
export const LivingLatticeSchema = z
  .object({
    nodes: z.array(
      z.object({
        id: z.string(),
        kind: z.enum(['citizen', 'species', 'message']),
        label: z.string(),
        class: z.string().optional(),
      }),
    ),
    edges: z.array(z.object({ from: z.string(), to: z.string(), kind: z.enum(['shout', 'posted']) })),
    bounded: z.object({ newest: z.number().int() }),
    generatedAt: Iso,
  })
  .register(apiSchemas, { id: 'LivingLattice' });

const PredicateResult = z.object({
  id: z.string(),
  score: z.number(),
  tau: z.number(),
  ratio: z.number(),
  passed: z.boolean(),
  fail_means: z.enum(['CONTRACT', 'BREAK']),
});

const ScoreFields = {
  verdict: Verdict,
  /** May the action go ahead: PERSIST, or CONTRACT recovered to PERSIST by contraction. */
  proceed: z.boolean(),
  recovered: z.boolean(),
  delta_t: z.number(),
  delta_window: z.number(),
  failed_predicates: z.array(z.string()),
  predicates: z.array(PredicateResult),
  binding: z.string(),
  window: z.object({ steps: z.number().int(), unit: z.string(), aggregate: z.string(), deltas: z.array(z.number()) }),
  bounds: z.looseObject({}),
  contraction: z.array(
    z.object({
      attempt: z.number().int(),
      strategy: z.string(),
      delta: z.number(),
      delta_window: z.number(),
      verdict: Verdict,
    }),
  ),
  contracted_plan: z.looseObject({}).optional(),
  /** When an earlier step in the window, not this request, sets the verdict: which step and why. */
  window_binding: z
    .object({
      step: z.number().int(),
      steps_ago: z.number().int(),
      delta: z.number(),
      verdict: Verdict,
      leaves_after: z.number().int(),
      reason: z.string(),
    })
    .optional(),
  input_fingerprint: z.string(),
  constitution_fingerprint: z.string(),
};

/** 200 of POST /api/omip/score: the verdict and everything it was made from. */
export const ScoreResultSchema = z
  .object({ decision_id: z.string(), ...ScoreFields })
  .register(apiSchemas, { id: 'ScoreResult' });

/** 200 of POST /api/omip/project: the score as a dry run, and the nearest admissible plan. */
export const ProjectionSchema = z
  .object({
    dry_run: z.literal(true),
    ...ScoreFields,
    projection: z.object({ admissible: z.boolean(), plan: z.looseObject({}).nullable(), delta: z.number() }),
  })
  .register(apiSchemas, { id: 'Projection' });

/** 200 of POST /api/omip/fingerprint. */
export const FingerprintSchema = z
  .object({
    canonical: z.string(),
    fingerprint: Sha256Id,
    algorithm: z.literal('sha256'),
    canonicalization: z.literal('RFC 8785'),
  })
  .register(apiSchemas, { id: 'Fingerprint' });

const { verdict, proceed, recovered, delta_t, delta_window, failed_predicates, input_fingerprint } = ScoreFields;
const AgentOutcome = z.object({
  id: z.string(),
  verdict,
  proceed,
  recovered,
  delta_t,
  delta_window,
  failed_predicates,
  input_fingerprint,
});

const ReceiptBody = {
  type: z.literal('omip.dual-exchange'),
  version: z.literal(1),
  agents: z.tuple([AgentOutcome, AgentOutcome]),
  joint: z.object({ allowed: z.boolean(), reason: z.string() }),
  constitution_fingerprint: z.string(),
  at: Iso,
  /** The id of the receipt before this one; null for the first. */
  prev: Sha256Id.nullable(),
};

/** The receipt a signing-key rotation appends (LOG_SIGNING_KEY_ROTATE=1). */
const KeyRotationBody = {
  type: z.literal('omip.log-key-rotation'),
  version: z.literal(1),
  /** Hex SHA-256 of the replaced key's public key; null when nothing kept it. */
  old_key_id: z.string().nullable(),
  new_key_id: z.string(),
  reason: z.string(),
  at: Iso,
  prev: Sha256Id.nullable(),
};

const TreeHead = z
  .object({ tree_size: z.number().int(), root_hash: z.string(), timestamp: Iso, signature: z.string() })
  .loose();

/** A dual-exchange receipt with its inclusion proof and the signed tree head (201 of POST /api/omip/dual-exchange, 200 of GET /api/omip/receipts/{id}). */
export const ReceiptSchema = z
  .object({
    receipt: z.union([z.object({ id: Sha256Id, ...ReceiptBody }), z.object({ id: Sha256Id, ...KeyRotationBody })]),
    logIndex: z.number().int(),
    tree_size: z.number().int(),
    root_hash: z.string(),
    audit_path: z.array(z.string()),
    tree_head: TreeHead,
  })
  .register(apiSchemas, { id: 'Receipt' });

/** GET /api/omip/receipts. */
export const ReceiptListSchema = z
  .object({
    receipts: z.array(
      z.union([
        z.object({ id: Sha256Id, logIndex: z.number().int(), ...ReceiptBody }),
        z.object({ id: Sha256Id, logIndex: z.number().int(), ...KeyRotationBody }),
      ]),
    ),
    nextCursor: NextCursor,
  })
  .register(apiSchemas, { id: 'ReceiptList' });

/** GET /api/omip/log: the signed tree head and, with ?first=, a consistency proof. */
export const LogSchema = z
  .object({
    tree_head: TreeHead,
    public_key: z.string(),
    hashing: z.string(),
    signature: z.string(),
    consistency: z
      .object({
        first: z.number().int(),
        second: z.number().int(),
        first_root: z.string(),
        second_root: z.string(),
        proof: z.array(z.string()),
      })
      .optional(),
  })
  .register(apiSchemas, { id: 'Log' });

/** GET /api/omip/drift: live metrics. */
export const DriftSchema = z
  .object({
    delta_t: z.number(),
    delta_window: z.number(),
    verdict: Verdict,
    failed_predicates: z.array(z.string()),
    contraction_count: z.number().int(),
    fail_closed: z.number().int(),
    samples: z.number().int(),
    by_verdict: z.record(z.string(), z.number().int()),
    recent: z.array(z.looseObject({})),
    epsilon: z.object({ local: z.number(), recoverable: z.number(), critical: z.number() }),
    window: z.looseObject({}),
    distance_kind: z.string(),
    generatedAt: Iso,
  })
  .register(apiSchemas, { id: 'Drift' });

/** GET /api/omip/health (spec 2.5). */
export const HealthSchema = z
  .object({
    status: z.literal('healthy'),
    omip_ready: z.boolean(),
    cache_ready: z.boolean(),
    sovereignty_enforced: z.boolean(),
    public: z.boolean(),
    primitive_count: z.number().int(),
    service: z.string(),
    version: z.string(),
    drift: z.looseObject({ delta_t: z.number(), verdict: Verdict }),
    seeds: z.looseObject({}),
    scraper: z.looseObject({}),
    methods: z.looseObject({}),
    seed_drift: z.looseObject({}),
    constitution: z.string(),
  })
  .register(apiSchemas, { id: 'Health' });

/** 201 of POST /api/ingress/audio: the sealed stem of the sandbox (nothing is written). */
export const IngressResultSchema = z
  .looseObject({
    status: z.literal('SANDBOX'),
    rewardWrite: z.literal(false),
    stem: z.looseObject({ id: Sha256Id, title: z.string(), durationSeconds: z.number() }),
    pipeline: z.array(z.looseObject({ stage: z.enum(['SCRUB', 'MAP', 'SEAL']) })),
  })
  .register(apiSchemas, { id: 'IngressResult' });

/** GET /bot-traffic.json (spec 2.9 botTraffic). */
export const BotTrafficSchema = z
  .looseObject({
    version: z.string(),
    generatedAt: Iso,
    windowStartedAt: Iso,
    observedRequests: z.number().int(),
    families: z.array(z.looseObject({ family: z.string(), requests: z.number().int(), firstSeen: Iso, lastSeen: Iso })),
  })
  .register(apiSchemas, { id: 'BotTraffic' });

/** A family's requests judged against robots.txt (RFC 9309): compliance and each Disallow line it broke. */
export const RobotsTxtComplianceSchema = z
  .object({
    compliance: z.enum(['not judged', 'compliant', 'violating']),
    judged: z.number().int(),
    violations: z.number().int(),
    /** Violations sent after the family had fetched that host's robots.txt. */
    violationsAfterFetch: z.number().int(),
    fetchedRobotsTxt: z.boolean(),
    firstFetch: Iso.nullable(),
    rules: z.array(
      z.object({
        /** `site` for the service's own robots.txt, else the host of an ingested log. */
        host: z.string(),
        /** The robots.txt version in force (a hash of its bytes). */
        version: z.string(),
        line: z.number().int(),
        /** The line as written: `Disallow: /path`. */
        rule: z.string(),
        /** The group's user-agent: the crawler's product token, or `*`. */
        agent: z.string(),
        requests: z.number().int(),
        afterFetch: z.number().int(),
        paths: z.array(z.object({ path: z.string(), requests: z.number().int() })),
      }),
    ),
  })
  .register(apiSchemas, { id: 'RobotsTxtCompliance' });

/** A family's requests judged against the operator's AI usage preferences, and the formats it was served. */
export const UsageServedSchema = z
  .object({
    /** Requests for paths whose Content-Usage its purpose goes against (a training crawler on train-ai=n). */
    preferenceBroken: z.number().int(),
    formats: z.object({ markdown: z.number().int(), html: z.number().int(), json: z.number().int() }),
    /** The x-markdown-tokens estimates of the Markdown it was served, summed. */
    markdownTokens: z.number().int(),
  })
  .register(apiSchemas, { id: 'UsageServed' });

/** GET /bot-wall.json (spec 2.9): meters, species, funnel, robots.txt versions; loose below the top. */
export const BotWallSchema = z
  .looseObject({
    species: z.array(z.looseObject({ species: z.string() })),
    botTraffic: z.looseObject({
      families: z.array(
        z.looseObject({ family: z.string(), robotsTxt: RobotsTxtComplianceSchema, usage: UsageServedSchema }),
      ),
    }),
    robotsTxt: z.object({
      judged_by: z.string(),
      versions: z.array(z.object({ host: z.string(), version: z.string() })),
    }),
    usagePreferences: z.object({ judged_by: z.string() }),
  })
  .register(apiSchemas, { id: 'BotWall' });

/** A document an MCP tool or A2A skill reads (the convert payload, the kit, the whats-next payload). */
export const DocumentSchema = z.looseObject({}).register(apiSchemas, { id: 'Document' });

/** A JSON-RPC 2.0 request (POST /mcp, POST /a2a); a batch is not taken. */
export const JsonRpcRequestSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    /** Absent for a notification. */
    id: z.union([z.string(), z.number()]).optional(),
    method: z.string(),
    params: z.looseObject({}).optional(),
  })
  .register(apiSchemas, { id: 'JsonRpcRequest', examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }] });

/** A JSON-RPC 2.0 answer: a result, or an error with its code (-32602 for an unknown tool or bad params). */
export const JsonRpcResponseSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]).optional(),
    result: z.unknown().optional(),
    error: z.looseObject({ code: z.number().int(), message: z.string() }).optional(),
  })
  .register(apiSchemas, { id: 'JsonRpcResponse' });

/** A JSON-RPC request to the A2A door: SendMessage with a DataPart naming a skill (v1.0 names; v0.3's message/send without A2A-Version). */
export const A2aRequestSchema = JsonRpcRequestSchema.extend({}).register(apiSchemas, {
  id: 'A2aRequest',
  examples: [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: {
        message: {
          messageId: '0190a6d2-8e1f-7c3a-9b1e-2f6a1c9d4e70',
          role: 'ROLE_USER',
          parts: [{ data: { skill: 'list_citizens', arguments: { limit: 5 } } }],
        },
      },
    },
  ],
});
