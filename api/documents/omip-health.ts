import type { Content } from '../content/load.ts';
import { at, type Links } from './links.ts';
import { OPERATIONS } from '../operations/table.ts';
import type { Omip } from '../omip/service.ts';

/** Routes of the admissibility subsystem, for health.methods.Allow; a parameter is an RFC 6570 expression. */
export const OMIP_ROUTES = {
  GET: [
    ...OPERATIONS.filter((op) => op.tag === 'omip' && op.method === 'GET').map((op) => op.path),
    '/api/omip/primitives',
  ],
  POST: OPERATIONS.filter((op) => op.tag === 'omip' && op.method === 'POST').map((op) => op.path),
};

/** GET /api/omip/health (spec 2.5) from the constitution and the live metrics. */
export function buildHealth(
  c: Content,
  links: Links,
  metrics: Awaited<ReturnType<Omip['driftMetrics']>>,
  primitiveCount: number,
) {
  const d = c.constitution.omip.drift;
  return {
    status: 'healthy',
    omip_ready: true,
    cache_ready: true,
    sovereignty_enforced: true,
    public: d.public,
    primitive_count: primitiveCount,
    service: `${c.site.service}-omip`,
    version: c.site.healthVersion,
    drift: {
      delta_t: metrics.delta_t,
      delta_window: metrics.delta_window,
      verdict: metrics.verdict,
      failed_predicates: metrics.failed_predicates,
      contraction_count: metrics.contraction_count,
      fail_closed: metrics.fail_closed,
      samples: metrics.samples,
      epsilon: metrics.epsilon,
      distance_kind: d.distance.kind,
      note: d.distance.note,
    },
    seeds: {
      constitution: at(links.site, '/eon/constitution.json'),
      omip_drift: at(links.site, '/eon/constitution.json#/omip/drift'),
      ai_txt: at(links.site, '/.well-known/ai.txt'),
    },
    scraper: { public: c.crawlPolicy.public, crawl_policy: c.crawlPolicy.crawl_policy, hint: c.crawlPolicy.hint },
    methods: {
      note: 'GET routes are public operational metrics. POST routes take JSON; GET on them answers 405 with an example body.',
      Allow: OMIP_ROUTES,
      score:
        "POST /api/omip/score {entity_id, room?, plan | state}: verdict, delta, every predicate, contraction log; window_binding names the earlier step when it, not this request, sets the verdict. A state scores registered predicates only (others are 422) and cannot raise identity_continuity or tool_policy above the server's evaluation.",
      dual_exchange:
        'POST /api/omip/dual-exchange {agents: [{id, proposal}, {id, proposal}]}: each agent scored alone; joint action needs dual PERSIST or contracted recovery; answers a content-addressed receipt.',
    },
    seed_drift: d,
    constitution: at(links.site, '/eon/constitution.json'),
  };
}
