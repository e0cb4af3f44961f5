/** Longest duration a track may have: one day. */
export const MAX_DURATION_SECONDS = 24 * 60 * 60;

const ISO = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;
const CLOCK = /^(?:(\d+):)?(\d+):([0-5]\d(?:\.\d+)?)$/;
const NUMBER = /^-?\d+(?:\.\d+)?$/;

/** A duration read, or precisely why it could not be. */
export type DurationReading = { seconds: number } | { problem: string };

/** The number of seconds a value says, or null when it is in no form this service reads. */
function secondsOf(value: unknown, unit: 's' | 'ms'): number | null {
  if (typeof value === 'number') return unit === 'ms' ? value / 1000 : value;
  if (typeof value !== 'string') return null;
  const v = value.trim();
  if (NUMBER.test(v)) return unit === 'ms' ? Number(v) / 1000 : Number(v);
  const iso = ISO.exec(v);
  if (iso && v !== 'P' && v !== 'PT' && !v.endsWith('T')) {
    const [, d, h, m, s] = iso.map((x) => Number(x ?? 0));
    return d! * 86400 + h! * 3600 + m! * 60 + s!;
  }
  const clock = CLOCK.exec(v);
  if (clock) {
    const [, h, m, s] = clock;
    return Number(h ?? 0) * 3600 + Number(m) * 60 + Number(s);
  }
  return null;
}

/**
 * Reads a duration in seconds from the forms the industry uses: a number (seconds, or
 * milliseconds when `unit` says so, as ID3 TLEN), `mm:ss`, `hh:mm:ss`, or ISO 8601 / xs:duration
 * (`PT3M25S`). Says which rule a value breaks: unreadable, zero, negative or over a day.
 */
export function readDuration(value: unknown, unit: 's' | 'ms' = 's'): DurationReading {
  const seconds = secondsOf(value, unit);
  const shown = JSON.stringify(value) ?? String(value);
  const unitName = unit === 'ms' ? 'milliseconds' : 'seconds';
  if (seconds === null)
    return { problem: `${shown} is not a duration: send ${unitName} as a number, mm:ss, hh:mm:ss or PT3M25S` };
  if (!Number.isFinite(seconds)) return { problem: `${shown} is not a finite duration` };
  if (seconds < 0) return { problem: `${shown} is negative` };
  if (seconds === 0) return { problem: `${shown} is zero: a track lasts more than 0 seconds` };
  if (seconds > MAX_DURATION_SECONDS)
    return { problem: `${shown} is ${seconds} s, over the limit of 24 hours (${MAX_DURATION_SECONDS} s)` };
  return { seconds: Math.round(seconds * 1000) / 1000 };
}

/** The duration in seconds, or null for anything missing, unreadable, zero, negative or over a day. */
export function parseDuration(value: unknown, unit: 's' | 'ms' = 's'): number | null {
  const reading = readDuration(value, unit);
  return 'seconds' in reading ? reading.seconds : null;
}
