import type { FunnelStep } from './ledger/ledger.ts';
import { REFERER_MAX_CHARS, utmSourceOf } from './referrals/referrals.ts';

/** One finished request, as telemetry and the request log see it. */
export interface ObservedRequest {
  method: string;
  path: string;
  /** The query as sent, `?` included, only when the target has one (robots.txt rules may name it). */
  query?: string;
  host: string;
  userAgent: string;
  /** The status answered, or 499 when the client went away before the answer was sent. */
  status: number;
  durationMs: number;
  /** When it was finished (or its client left), in milliseconds since the epoch; counted at the clock's time when absent. */
  time?: number;
  /** The client address as the socket saw it; never stored or logged in clear. */
  remoteAddress: string;
  /** The connection it came on, as an identity only (telemetry reuses the last answer for the same User-Agent on it). */
  connection?: object;
  /** Where the request says it came from: its Referer (cut to REFERER_MAX_CHARS) and its target's utm_source; only when it has either. Never stored: telemetry keeps the operator and the table's host. */
  referral?: { referer?: string; utmSource?: string };
  /** The format answered (a Markdown, HTML or JSON document or answer), when it was one of them. */
  format?: 'markdown' | 'html' | 'json' | undefined;
  /** The x-markdown-tokens estimate of a Markdown answer. */
  markdownTokens?: number | undefined;
  /** The funnel step a tool call in it took (MCP, A2A); an HTTP route's is its operation's. */
  step?: FunnelStep | undefined;
  /** HTTP Message Signature headers (Web Bot Auth), only when the request carries them. */
  signature?: { signature: string; signatureInput: string; signatureAgent: string | undefined; target: string };
}

/** The referral field of a request: its Referer (cut) and its query's utm_source; undefined when it has neither. */
export function referralOf(referer: string | undefined, query: string): ObservedRequest['referral'] {
  const utmSource = utmSourceOf(query);
  if (!referer && !utmSource) return undefined;
  return { ...(referer ? { referer: referer.slice(0, REFERER_MAX_CHARS) } : {}), ...(utmSource ? { utmSource } : {}) };
}
