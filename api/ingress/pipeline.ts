import { DomainError } from '../problems/domain.ts';
import { fingerprintOf } from '../omip/canonical.ts';
import type { NormalisedMetadata } from './aliases.ts';
import { parseDuration } from './duration.ts';

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

const reject = (code: 'DRM_REJECT' | 'TITLE_REQUIRED' | 'DURATION_INVALID', detail: string) => new DomainError(code, detail);

/** The rejection rules, in order: DRM first, then title, then duration. */
export function checkAdmissible(m: NormalisedMetadata): { title: string; durationSeconds: number } {
  if (m.drm) throw reject('DRM_REJECT', 'DRM-locked content is rejected: the sandbox takes only content it may read.');
  if (!m.title) throw reject('TITLE_REQUIRED', 'A title is required (title, DisplayTitleText or TIT2), and it must not be blank.');
  const seconds = m.duration ? parseDuration(m.duration.value, m.duration.unit) : null;
  if (seconds === null) {
    throw reject('DURATION_INVALID', m.duration ? `${m.duration.field} is not a duration between 0 and 24 hours (seconds, mm:ss, hh:mm:ss or PT3M25S).` : 'A duration is required (duration, Duration or TLEN).');
  }
  return { title: m.title, durationSeconds: seconds };
}

/** SCRUB: chart positions and every other commercial ranking are dropped, and named. */
export function scrub(m: NormalisedMetadata) {
  return { stage: 'SCRUB' as const, dropped: Object.keys(m.rankings).sort() };
}

/** MAP: stream and play counts become legacyNoise only (their sum, when they are numbers). */
export function map(m: NormalisedMetadata) {
  const numbers = Object.values(m.counts)
    .map((v) => (typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v))
    .filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0);
  const legacyNoise = numbers.length > 0 ? { streams: numbers.reduce((a, b) => a + b, 0) } : {};
  return { stage: 'MAP' as const, legacyNoise, from: Object.keys(m.counts).sort() };
}

/** SEAL: the stem's id is the sha256 of its RFC 8785 form, so the same metadata seals the same. */
export function seal(m: NormalisedMetadata, admissible: { title: string; durationSeconds: number }, legacyNoise: Stem['legacyNoise']): Stem {
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
    pipeline: [scrubbed, { stage: mapped.stage, legacyNoise: mapped.legacyNoise, from: mapped.from }, { stage: 'SEAL' as const, id: stem.id, canonicalization: 'RFC 8785' }],
  };
}
