/**
 * The bot wall's "What AI sends back" section: per operator, its crawlers' requests beside the
 * people its products sent, in the selected range. Reads `referrals` of /bot-wall.json (a document
 * without it shows the section empty, never an error). Pure and DOM-free, like bot-wall-view.
 */
import { esc } from './charts.ts';
import { RANGES, rangeBuckets, type RangeKey } from './bot-wall-view.ts';

export interface ReferralView {
  operator: string;
  crawlerRequests: number;
  referredVisits: number;
  /** Crawler requests per referred visit; null when none was referred. */
  ratio: number | null;
  sources: { source: string; visits: number }[];
}

type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Loose) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Operators with crawler requests or referred visits in the range, most of both first. */
export function toReferralView(doc: unknown, range: RangeKey, now: Date): ReferralView[] {
  const { bucket, starts } = rangeBuckets(range, now);
  const first = starts[0]!;
  const rows = arr(obj(obj(doc).referrals).operators).map((raw) => {
    const o = obj(raw);
    let crawls = 0;
    let visits = 0;
    for (const b of arr(bucket === 'hour' ? o.hourly : o.daily)) {
      const t = Date.parse(String(obj(b)[bucket] ?? ''));
      if (Number.isNaN(t) || t < first) continue;
      crawls += num(obj(b).crawlerRequests);
      visits += num(obj(b).visits);
    }
    return {
      operator: String(o.operator ?? 'unnamed'),
      crawlerRequests: crawls,
      referredVisits: visits,
      ratio: visits > 0 ? Math.round((100 * crawls) / visits) / 100 : null,
      sources: arr(o.sources).map((s) => ({ source: String(obj(s).source ?? ''), visits: num(obj(s).visits) })),
    };
  });
  return rows
    .filter((r) => r.crawlerRequests + r.referredVisits > 0)
    .sort(
      (a, b) =>
        b.crawlerRequests + b.referredVisits - (a.crawlerRequests + a.referredVisits) ||
        a.operator.localeCompare(b.operator),
    );
}

/** The section's table: one row an operator, with `data-operator` for machines. */
export function renderReferrals(rows: ReferralView[], range: RangeKey): string {
  const span = RANGES[range].label.toLowerCase();
  if (rows.length === 0)
    return `<p class="empty">No AI operator crawled or sent anyone here in the range (${esc(span)}).</p>`;
  return `<div class="scroll" tabindex="0" role="region" aria-label="What AI sends back, by operator"><table><caption>Crawler requests and referred visits by operator, ${esc(span)}</caption><thead><tr><th scope="col">Operator</th><th scope="col" class="num">Crawler requests</th><th scope="col" class="num">Referred visits</th><th scope="col" class="num">Crawls per visit</th><th scope="col">Sent from (since the window started)</th></tr></thead><tbody>${rows
    .map(
      (r) =>
        `<tr data-operator="${esc(r.operator)}" data-visits="${r.referredVisits}"><th scope="row">${esc(r.operator)}</th><td class="num">${r.crawlerRequests}</td><td class="num">${r.referredVisits}</td><td class="num">${r.ratio === null ? '<span class="muted">none sent</span>' : r.ratio}</td><td>${
          r.sources.length
            ? r.sources.map((s) => `${esc(s.source)} × ${s.visits}`).join(', ')
            : '<span class="muted">–</span>'
        }</td></tr>`,
    )
    .join('')}</tbody></table></div>`;
}
