// The log fixtures (test/telemetry/log-formats/fixtures) are dated 2026-11-21 and 22. The ledger
// counts only records of its own range at the server's clock (api/telemetry/ledger/ledger.ts, ledgerRange:
// the last 8 UTC days), so tests that send them to a running server move them to recent days first.

const DAY = 86_400_000;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The day the fixtures' first records are dated. */
export const FIXTURE_DAY = '2026-11-21';

/** Whole days from FIXTURE_DAY to two days before today (UTC): moved so, every fixture record is in the ledger's range and none is ahead of the clock. */
export function fixtureShift(now = Date.now()): number {
  return Math.floor(now / DAY) - 2 - Date.parse(FIXTURE_DAY) / DAY;
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * A log's text with every date moved by `days`: ISO dates (2026-11-21), the common log format's
 * (21/Nov/2026) and epoch times near them in seconds, milliseconds or nanoseconds.
 */
export function recentLog(text: string, days = fixtureShift()): string {
  const by = BigInt(days) * 86_400n;
  return text
    .replace(/\b(\d{4}-\d{2}-\d{2})(?=[T\t "]|$)/gm, (date: string) => isoDay(Date.parse(date) + days * DAY))
    .replace(/\b(\d{2})\/([A-Z][a-z]{2})\/(\d{4})\b/g, (_, d: string, mon: string, y: string) => {
      const [yy, mm, dd] = isoDay(Date.UTC(Number(y), MONTHS.indexOf(mon), Number(d)) + days * DAY).split('-');
      return `${dd}/${MONTHS[Number(mm) - 1]}/${yy}`;
    })
    .replace(/\b179\d{7}(\d{3}|\d{9})?\b/g, (n: string) => String(BigInt(n) + by * 10n ** BigInt(n.length - 10)));
}

/** An ISO time of a fixture, moved as recentLog moves it. */
export const recentIso = (iso: string, days = fixtureShift()) => new Date(Date.parse(iso) + days * DAY).toISOString();
