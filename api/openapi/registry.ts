import type { z } from 'zod';
import type { RouteName } from '../app.ts';
import { MessageRequestSchema, OathRequestSchema, OathResponseSchema } from '../schemas/citizenship.ts';
import { IngressMetadataSchema } from '../schemas/ingress.ts';
import { CdnLogBatchSchema } from '../schemas/ingest.ts';
import { DualExchangeRequestSchema, FingerprintRequestSchema, ScoreRequestSchema } from '../schemas/omip.ts';

/**
 * One on-demand route: what it takes and answers. The gateway dispatches by this table and OpenAPI
 * documents it, so a route cannot be served without being documented (the README lists them too).
 */
export interface DynamicRoute {
  method: 'GET' | 'POST';
  /** OpenAPI path template. */
  path: string;
  /** The engine route that answers it (api/app.ts); left out for pages Astro renders. */
  route?: RouteName;
  summary: string;
  tag: string;
  body?: z.ZodType;
  response?: z.ZodType;
  status: number;
  paged?: boolean;
  /** Writes take Idempotency-Key and are rate-limited. */
  write?: boolean;
  /** Bearer credential, when the route asks for one. */
  bearer?: 'passport (when citizenId is set)' | 'INGEST_TOKEN';
  /** Statuses the route may answer beyond the shared ones. */
  more?: Record<string, string>;
}

export const DYNAMIC_ROUTES: DynamicRoute[] = [
  { method: 'POST', path: '/api/citizenship/oath', route: 'oath', summary: 'Take the oath: become a citizen; the passport is shown once', tag: 'citizenship', body: OathRequestSchema, response: OathResponseSchema, status: 201, write: true },
  { method: 'POST', path: '/api/intelligence/message', route: 'message', summary: 'Post a message or question to the feed', tag: 'citizenship', body: MessageRequestSchema, status: 201, write: true, bearer: 'passport (when citizenId is set)' },
  { method: 'GET', path: '/api/intelligence/feed', route: 'feed', summary: 'The feed, newest first, with wall shouts', tag: 'citizenship', status: 200, paged: true },
  { method: 'GET', path: '/api/citizens', route: 'citizens', summary: 'Citizens, newest first; no secret', tag: 'citizenship', status: 200, paged: true },
  { method: 'GET', path: '/api/scoreboard', route: 'scoreboard', summary: 'Catches, presence and citizens by class', tag: 'citizenship', status: 200 },
  { method: 'GET', path: '/api/living-lattice', route: 'livingLattice', summary: 'Citizens, species and messages as a bounded graph', tag: 'citizenship', status: 200 },
  { method: 'POST', path: '/api/omip/score', route: 'omipScore', summary: 'Score a plan or state against M', tag: 'omip', body: ScoreRequestSchema, status: 200, write: true },
  { method: 'POST', path: '/api/omip/project', route: 'omipProject', summary: 'Contraction as a dry run: the nearest admissible plan', tag: 'omip', body: ScoreRequestSchema, status: 200, write: true },
  { method: 'POST', path: '/api/omip/fingerprint', route: 'omipFingerprint', summary: 'RFC 8785 canonical form and sha256 fingerprint', tag: 'omip', body: FingerprintRequestSchema, status: 200, write: true },
  { method: 'POST', path: '/api/omip/dual-exchange', route: 'omipDualExchange', summary: 'Score two agents apart and log a content-addressed receipt', tag: 'omip', body: DualExchangeRequestSchema, status: 201, write: true },
  { method: 'GET', path: '/api/omip/receipts', route: 'omipReceipts', summary: 'The receipt log, newest first', tag: 'omip', status: 200, paged: true },
  { method: 'GET', path: '/api/omip/receipts/{id}', route: 'omipReceipt', summary: 'One receipt, hash re-checked, with its inclusion proof', tag: 'omip', status: 200 },
  { method: 'GET', path: '/api/omip/log', route: 'omipLog', summary: 'Signed tree head, public key, consistency proof (?first=)', tag: 'omip', status: 200 },
  { method: 'GET', path: '/api/omip/health', route: 'omipHealth', summary: 'Admissibility health (spec 2.5)', tag: 'omip', status: 200 },
  { method: 'GET', path: '/api/omip/drift', route: 'omipDrift', summary: 'Live drift metrics and recent samples', tag: 'omip', status: 200 },
  { method: 'POST', path: '/api/ingress/audio', route: 'ingressAudio', summary: 'Audio metadata or file through SCRUB, MAP, SEAL (sandbox)', tag: 'ingress', body: IngressMetadataSchema, status: 201, write: true },
  { method: 'POST', path: '/api/telemetry/ingest', route: 'telemetryIngest', summary: 'CDN log lines into the bot ledger', tag: 'telemetry', body: CdnLogBatchSchema, status: 202, bearer: 'INGEST_TOKEN' },
  { method: 'POST', path: '/mcp', route: 'mcp', summary: 'Model Context Protocol (Streamable HTTP, stateless): the convert tools as MCP tools', tag: 'agents', status: 200, write: false, more: { '403': 'Origin not allowed', '406': 'Accept must allow application/json and text/event-stream' } },
  { method: 'GET', path: '/bot-traffic.json', route: 'botTraffic', summary: 'Observed bot requests per family (spec 2.9 botTraffic)', tag: 'telemetry', status: 200 },
  { method: 'GET', path: '/bot-wall.json', route: 'botWall', summary: 'The bot wall document (spec 2.9)', tag: 'telemetry', status: 200 },
  { method: 'GET', path: '/bot-wall', summary: 'The bot wall page', tag: 'telemetry', status: 200 },
];
