import { LEDGER_LIMITS } from './ledger.ts';

/** The ranges the ledger can be read over: hourly buckets for hours, daily for days, or the whole window. */
export const LEDGER_RANGES = ['1h', '24h', '7d', '30d', 'all'] as const;
export type LedgerRange = (typeof LEDGER_RANGES)[number];
export const RANGE_SPANS: Record<Exclude<LedgerRange, 'all'>, { bucket: 'hourly' | 'daily'; n: number }> = {
  '1h': { bucket: 'hourly', n: 1 },
  '24h': { bucket: 'hourly', n: 24 },
  '7d': { bucket: 'daily', n: 7 },
  '30d': { bucket: 'daily', n: 30 },
};

/** Why a range cannot be answered: it reaches past the buckets kept (LEDGER_HOURS, LEDGER_DAYS); null when it can. */
export function rangeBeyondRetention(range: LedgerRange): string | null {
  if (range === 'all') return null;
  const { bucket, n } = RANGE_SPANS[range];
  const kept = bucket === 'hourly' ? LEDGER_LIMITS.hours : LEDGER_LIMITS.days;
  return n <= kept
    ? null
    : `range=${range} needs ${n} ${bucket === 'hourly' ? 'hourly' : 'daily'} buckets; this server keeps ${kept} (${bucket === 'hourly' ? 'LEDGER_HOURS' : 'LEDGER_DAYS'})`;
}
