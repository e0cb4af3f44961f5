/** Longest duration a track may have: one day. */
export const MAX_DURATION_SECONDS = 24 * 60 * 60;

const ISO = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;
const CLOCK = /^(?:(\d+):)?(\d+):([0-5]\d(?:\.\d+)?)$/;
const NUMBER = /^\d+(?:\.\d+)?$/;

/**
 * Reads a duration in seconds from the forms the industry uses: a number (seconds, or
 * milliseconds when `unit` says so, as ID3 TLEN), `mm:ss`, `hh:mm:ss`, or ISO 8601 / xs:duration
 * (`PT3M25S`). Returns null for anything missing, unreadable, zero, negative or over a day.
 */
export function parseDuration(value: unknown, unit: 's' | 'ms' = 's'): number | null {
  let seconds: number | null = null;
  if (typeof value === 'number') seconds = unit === 'ms' ? value / 1000 : value;
  else if (typeof value === 'string') {
    const v = value.trim();
    const iso = ISO.exec(v);
    const clock = CLOCK.exec(v);
    if (NUMBER.test(v)) seconds = unit === 'ms' ? Number(v) / 1000 : Number(v);
    else if (iso && v !== 'P' && v !== 'PT' && !v.endsWith('T')) {
      const [, d, h, m, s] = iso.map((x) => Number(x ?? 0));
      seconds = d! * 86400 + h! * 3600 + m! * 60 + s!;
    } else if (clock) {
      const [, h, m, s] = clock;
      seconds = Number(h ?? 0) * 3600 + Number(m) * 60 + Number(s);
    }
  }
  if (seconds === null || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_DURATION_SECONDS) return null;
  return Math.round(seconds * 1000) / 1000;
}
