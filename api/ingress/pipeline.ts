import { DomainError } from '../problems/domain.ts';
import { fingerprintOf } from '../omip/canonical.ts';
import type { NormalisedMetadata } from './aliases.ts';
import { readDuration } from './duration.ts';

/** A sovereign stem node: what survives the pipeline. */
export interface Stem {
  id: string;
  title: string;
  artist?: string;
  album?: string;
  isrc?: string;
  label?: string;
  genre?: string;
  durationSeconds: number;
  /** Legacy commercial counts, kept as noise only: never signal, never reward. */
  legacyNoise: { streams?: number };
}

const reject = (code: 'DRM_REJECT' | 'TITLE_REQUIRED' | 'DURATION_INVALID', detail: string) =>
  new DomainError(code, detail);

/** The rejection rules, in order: DRM first, then title, then duration. Each says what was wrong. */
export function checkAdmissible(m: NormalisedMetadata): { title: string; durationSeconds: number } {
  if (m.drm)
    throw reject(
      'DRM_REJECT',
      `DRM-locked content is rejected (${m.drmEvidence.join('; ')}): the sandbox takes only content it may read.`,
    );
  if (!m.title) {
    throw reject(
      'TITLE_REQUIRED',
      m.unusable.title
        ? `A title is required and ${m.unusable.title}: send it as text with at least one visible character.`
        : "A title is required: none was sent and the file's tags name none. Send title, DisplayTitleText or TIT2.",
    );
  }
  if (!m.duration)
    throw reject(
      'DURATION_INVALID',
      'A duration is required: none was sent and none was measured from a file. Send duration, Duration or TLEN.',
    );
  const reading = readDuration(m.duration.value, m.duration.unit);
  if ('problem' in reading)
    throw reject(
      'DURATION_INVALID',
      `${m.duration.field} ${reading.problem}. A duration is more than 0 and at most 24 hours.`,
    );
  return { title: m.title, durationSeconds: reading.seconds };
}

/** SCRUB: chart positions and every other commercial ranking are dropped, and named. */
export function scrub(m: NormalisedMetadata) {
  return { stage: 'SCRUB' as const, dropped: Object.keys(m.rankings).sort() };
}

// Digits grouped in thousands by one separator used throughout: 1,234 / 1 234 / 1_234 / 1'234
// (and the no-break spaces of typeset numbers). A dot is left out: 1.234 may be a decimal.
const GROUPED = /^\d{1,3}([,\u00a0\u202f '_])\d{3}(?:\1\d{3})*$/;

/** A stream or play count read as a whole number, or why it cannot be. */
export function readCount(value: unknown): { count: number } | { problem: string } {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) return { problem: 'not a whole number' };
    return value < 0 ? { problem: 'negative' } : { count: value };
  }
  if (typeof value === 'string') {
    const v = value.trim();
    if (/^\d+$/.test(v) || GROUPED.test(v)) {
      const count = Number(v.replace(/\D/g, ''));
      return Number.isSafeInteger(count) ? { count } : { problem: 'too large to count exactly' };
    }
    return { problem: 'not a whole number: send digits, optionally grouped in thousands (1234 or 1,234)' };
  }
  return { problem: `${value === null ? 'null' : typeof value}, not a count` };
}

/**
 * MAP: stream and play counts become legacyNoise only (their sum). `from` names the fields
 * counted; a field that cannot be read is not dropped silently but listed in `unreadable`.
 */
export function map(m: NormalisedMetadata) {
  const from: string[] = [];
  const unreadable: { field: string; value: unknown; problem: string }[] = [];
  let sum = 0;
  for (const field of Object.keys(m.counts).sort()) {
    const reading = readCount(m.counts[field]);
    if ('count' in reading) {
      sum += reading.count;
      from.push(field);
    } else unreadable.push({ field, value: m.counts[field], problem: reading.problem });
  }
  const legacyNoise = from.length > 0 ? { streams: sum } : {};
  return { stage: 'MAP' as const, legacyNoise, from, unreadable };
}

/** SEAL: the stem's id is the sha256 of its RFC 8785 form, so the same metadata seals the same. */
export function seal(
  m: NormalisedMetadata,
  admissible: { title: string; durationSeconds: number },
  legacyNoise: Stem['legacyNoise'],
): Stem {
  const body = {
    title: admissible.title,
    ...(m.artist ? { artist: m.artist } : {}),
    ...(m.album ? { album: m.album } : {}),
    ...(m.isrc ? { isrc: m.isrc.toUpperCase() } : {}),
    ...(m.label ? { label: m.label } : {}),
    ...(m.genre ? { genre: m.genre } : {}),
    durationSeconds: admissible.durationSeconds,
    legacyNoise,
  };
  return { id: fingerprintOf(body), ...body };
}

/** SCRUB → MAP → SEAL. Pure: nothing is written anywhere (rewardWrite is false). */
export function runPipeline(m: NormalisedMetadata) {
  const admissible = checkAdmissible(m);
  const scrubbed = scrub(m);
  const mapped = map(m);
  const stem = seal(m, admissible, mapped.legacyNoise);
  return {
    status: 'SANDBOX' as const,
    rewardWrite: false as const,
    stem,
    pipeline: [
      scrubbed,
      { stage: mapped.stage, legacyNoise: mapped.legacyNoise, from: mapped.from, unreadable: mapped.unreadable },
      { stage: 'SEAL' as const, id: stem.id, canonicalization: 'RFC 8785' },
    ],
  };
}
