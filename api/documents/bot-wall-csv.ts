import { crawlToReferral } from '../telemetry/referrals/referrals.ts';
import { BAIT_BROWSER, LEDGER_LIMITS, type FamilyRow, type TelemetrySnapshot } from '../telemetry/ledger/ledger.ts';

/** The ranges of GET /bot-wall.csv: hourly buckets for hours, daily for days, or the whole window. */
export const CSV_RANGES = ['1h', '24h', '7d', '30d', 'all'] as const;
export type CsvRange = (typeof CSV_RANGES)[number];
const SPAN: Record<Exclude<CsvRange, 'all'>, { bucket: 'hourly' | 'daily'; n: number }> = {
  '1h': { bucket: 'hourly', n: 1 },
  '24h': { bucket: 'hourly', n: 24 },
  '7d': { bucket: 'daily', n: 7 },
  '30d': { bucket: 'daily', n: 30 },
};

/** Why a range cannot be answered: it reaches past the buckets kept (LEDGER_HOURS, LEDGER_DAYS); null when it can. */
export function rangeBeyondRetention(range: CsvRange): string | null {
  if (range === 'all') return null;
  const { bucket, n } = SPAN[range];
  const kept = bucket === 'hourly' ? LEDGER_LIMITS.hours : LEDGER_LIMITS.days;
  return n <= kept
    ? null
    : `range=${range} needs ${n} ${bucket === 'hourly' ? 'hourly' : 'daily'} buckets; this server keeps ${kept} (${bucket === 'hourly' ? 'LEDGER_HOURS' : 'LEDGER_DAYS'})`;
}

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
  const { bucket, n } = SPAN[range];
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
  const wallClass = (f: FamilyRow) => (f.failed > f.verified ? 'Cosplay' : f.class);
  let out = csvRow([...CSV_COLUMNS]);
  for (const { f, requests } of rows) {
    const sent = visits(f.operator);
    out += csvRow([
      f.family,
      wallClass(f),
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
