import { crawlToReferral } from '../telemetry/referrals/referrals.ts';
import { BAIT_BROWSER, type TelemetrySnapshot } from '../telemetry/ledger/ledger.ts';
import { RANGE_SPANS, type LedgerRange } from '../telemetry/ledger/ranges.ts';

/** The ranges of GET /bot-wall.csv: the ledger's own (api/telemetry/ledger/ranges.ts). */
export { LEDGER_RANGES as CSV_RANGES, rangeBeyondRetention } from '../telemetry/ledger/ranges.ts';
export type CsvRange = LedgerRange;

/**
 * One CSV field as RFC 4180 writes it (quoted when it holds a comma, quote, CR or LF; quotes
 * doubled), after the guard against formula injection (OWASP): text starting with = + - @, a tab
 * or a CR gets a leading apostrophe, so a spreadsheet shows it and never runs it. Family names and
 * paths come from the network.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export const csvRow = (cells: (string | number | null)[]) => `${cells.map(csvField).join(',')}\r\n`;

/** Requests of a row's buckets in the range (the last n hours or days, the current one included); the total for `all`. */
function inRange(
  counts: { hourly: Record<string, number>; daily: Record<string, number> },
  total: number,
  range: CsvRange,
  now: Date,
): number {
  if (range === 'all') return total;
  const { bucket, n } = RANGE_SPANS[range];
  const size = bucket === 'hourly' ? 3_600_000 : 86_400_000;
  const since = new Date(Math.floor(now.getTime() / size) * size - (n - 1) * size)
    .toISOString()
    .slice(0, bucket === 'hourly' ? 13 : 10);
  return Object.entries(counts[bucket] ?? {}).reduce(
    (sum, [key, v]) => (key.slice(0, since.length) >= since ? sum + v : sum),
    0,
  );
}

export const CSV_COLUMNS = [
  'family',
  'class',
  'operator',
  'requests',
  'requests_since_window_start',
  'verification_method',
  'verified',
  'failed_verification',
  'unverifiable',
  'robots_txt_fetches',
  'disallowed_hits',
  'operator_referred_visits',
  'operator_crawl_to_referral',
  'usage_preference_broken',
  'markdown_answers',
  'html_answers',
  'json_answers',
  'markdown_tokens',
] as const;

/**
 * GET /bot-wall.csv?range=: one row a family with requests in the range, most first; the operator's
 * referred visits (what AI sends back) and its crawl-to-referral ratio in the same range.
 */
export function buildBotWallCsv(s: TelemetrySnapshot, range: CsvRange, now: Date): string {
  const families = Object.values(s.families).filter((f) => f.family !== BAIT_BROWSER);
  const crawls = new Map<string, number>();
  const rows = families
    .map((f) => ({ f, requests: inRange(f, f.requests, range, now) }))
    .filter((r) => r.requests > 0)
    .sort((a, b) => b.requests - a.requests || a.f.family.localeCompare(b.f.family));
  for (const { f, requests } of rows) if (f.operator) crawls.set(f.operator, (crawls.get(f.operator) ?? 0) + requests);
  const visits = (operator: string | null) => {
    const r = operator ? s.referrals?.[operator] : undefined;
    return r ? inRange(r, r.visits, range, now) : 0;
  };
  let out = csvRow([...CSV_COLUMNS]);
  for (const { f, requests } of rows) {
    const sent = visits(f.operator);
    out += csvRow([
      f.family,
      // Its own class: its failed verifications are spoofed requests of its name, in failed_verification.
      f.class,
      f.operator,
      requests,
      f.requests,
      f.verify,
      f.verified,
      f.failed,
      f.unverifiable,
      f.robotsFetches,
      f.violations,
      f.operator ? sent : null,
      f.operator ? crawlToReferral(crawls.get(f.operator) ?? 0, sent) : null,
      f.usage?.preferenceBroken ?? 0,
      f.usage?.markdown ?? 0,
      f.usage?.html ?? 0,
      f.usage?.json ?? 0,
      f.usage?.markdownTokens ?? 0,
    ]);
  }
  return out;
}
