import { remember } from '../../memo.ts';
import type { AiReferrers } from '../../schemas/ai-referrers.ts';

/** Characters of a Referer header read at most; the gateway and the log readers cut it to this. */
export const REFERER_MAX_CHARS = 512;
/** Characters of a utm_source value read at most. */
export const UTM_MAX_CHARS = 64;

/** A visit an AI product sent: its operator and the table's host (or `utm_source=value`), never the URL. */
export interface Referral {
  operator: string;
  /** The table entry that matched: a host (`chatgpt.com`, `bing.com/chat`) or `utm_source=chatgpt.com`. */
  source: string;
}

/** Maps a request's Referer and utm_source to the AI operator that sent it. */
export type ReferralRule = (referer: string | undefined, utmSource: string | undefined) => Referral | null;

/**
 * Whether a request can be a visit an AI product sent: a person's (neither a bot nor an unknown
 * client, which are counted apart), reading a page (GET or HEAD) that was there (status below 400).
 */
export const mayBeVisit = (c: { bot: boolean; unknown?: true }, method: string, status: number): boolean =>
  !c.bot && c.unknown !== true && (method === 'GET' || method === 'HEAD') && status < 400;

/** The host of a Referer without `www.`, and its path; null when it is no http(s) URL. */
function refererParts(referer: string): { host: string; path: string } | null {
  if (referer.length > REFERER_MAX_CHARS || !/^https?:\/\//i.test(referer)) return null;
  try {
    const url = new URL(referer);
    return {
      host: url.hostname
        .toLowerCase()
        .replace(/^www\./, '')
        .replace(/\.$/, ''),
      path: url.pathname,
    };
  } catch {
    return null;
  }
}

/** Referers whose referral a worker, and the counting thread, keep (each a memo, cleared when full). */
export const REFERERS = 4096;

/**
 * The rule with each Referer's answer kept in `memo` (at most REFERERS): Referers repeat (a few
 * sites send most visits), and reading one as a URL costs more than a lookup. A utm_source is read
 * each time.
 */
export function rememberReferrals(rule: ReferralRule, memo = new Map<string, Referral | null>()): ReferralRule {
  return (referer, utmSource) => {
    if (utmSource !== undefined || referer === undefined) return rule(referer, utmSource);
    const found = memo.get(referer);
    return found !== undefined ? found : remember(memo, REFERERS, referer, rule(referer, undefined));
  };
}

/**
 * The rule of content/ai-referrers.yaml. A Referer's host matches a listed host or any subdomain of
 * it (the most specific listed host wins: gemini.google.com is Google's, google.com alone is no AI
 * product); a `host/path` entry matches only under that path. utm_source matches a listed value, or
 * a listed host (`utm_source=perplexity.ai`). The Referer is asked first: it is what the browser saw.
 */
export function referralRule(table: AiReferrers): ReferralRule {
  const hosts = new Map<string, { operator: string; paths: { prefix: string; source: string }[]; whole: boolean }>();
  const utm = new Map<string, string>();
  for (const o of table.operators) {
    for (const entry of o.hosts) {
      const slash = entry.indexOf('/');
      const host = slash === -1 ? entry : entry.slice(0, slash);
      const at = hosts.get(host) ?? { operator: o.operator, paths: [], whole: false };
      if (slash === -1) at.whole = true;
      else at.paths.push({ prefix: entry.slice(slash), source: entry });
      hosts.set(host, at);
    }
    for (const u of o.utm_sources) utm.set(u, o.operator);
  }

  const byHost = (host: string, path: string): Referral | null => {
    // From the full host to its parent domains: labs.perplexity.ai, then perplexity.ai.
    for (let h = host; h.includes('.'); h = h.slice(h.indexOf('.') + 1)) {
      const at = hosts.get(h);
      if (!at) continue;
      const under = at.paths.find(
        (p) => path === p.prefix || path.startsWith(p.prefix.endsWith('/') ? p.prefix : `${p.prefix}/`),
      );
      if (under) return { operator: at.operator, source: under.source };
      if (at.whole) return { operator: at.operator, source: h };
    }
    return null;
  };

  return (referer, utmSource) => {
    if (referer) {
      const parts = refererParts(referer);
      const found = parts && byHost(parts.host, parts.path);
      if (found) return found;
    }
    if (utmSource) {
      const value = utmSource.slice(0, UTM_MAX_CHARS).trim().toLowerCase();
      const operator = utm.get(value);
      if (operator) return { operator, source: `utm_source=${value}` };
      const asHost = /^[a-z0-9.-]+$/.test(value) ? byHost(value.replace(/^www\./, ''), '/') : null;
      if (asHost) return { operator: asHost.operator, source: `utm_source=${asHost.source}` };
    }
    return null;
  };
}

/** utm_source of a request target's query (`/page?utm_source=chatgpt.com`), cut to UTM_MAX_CHARS; undefined when absent. */
export function utmSourceOf(query: string): string | undefined {
  // Most requests carry no utm_source: skip parsing their query.
  if (!query.includes('utm_source=')) return undefined;
  const value = new URLSearchParams(query.startsWith('?') ? query.slice(1) : query).get('utm_source');
  return value ? value.slice(0, UTM_MAX_CHARS) : undefined;
}

/** Crawls per referred visit, to two decimals; null when no visit was referred (Cloudflare Radar's crawl-to-referral ratio). */
export const crawlToReferral = (crawls: number, visits: number): number | null =>
  visits > 0 ? Math.round((100 * crawls) / visits) / 100 : null;
