/** Audio metadata after the industry's names are read: one field per meaning. */
export interface NormalisedMetadata {
  title?: string;
  artist?: string;
  album?: string;
  isrc?: string;
  label?: string;
  genre?: string;
  /** The duration as sent, and the unit its field implies. */
  duration?: { value: unknown; unit: 's' | 'ms'; field: string };
  /** Stream and play counts, by the field they came in. */
  counts: Record<string, unknown>;
  /** Commercial rankings (chart positions and the like), by field: SCRUB drops them. */
  rankings: Record<string, unknown>;
  /** True when anything says the content is DRM-locked. */
  drm: boolean;
  /** What said so: `name: value` of each DRM flag that was set. */
  drmEvidence: string[];
  /** Text fields sent under an accepted name but unusable (blank, or not text), by field: why. */
  unusable: Partial<Record<Field, string>>;
}

type Field = Exclude<keyof NormalisedMetadata, 'duration' | 'counts' | 'rankings' | 'drm' | 'drmEvidence' | 'unusable'>;

/** Names accepted for each field: DDEX ERN, ID3 frames, and plain names (compared case-insensitively). */
export const TEXT_ALIASES: Record<Field, string[]> = {
  title: ['DisplayTitleText', 'TitleText', 'TIT2', 'title', 'name', 'trackTitle'],
  artist: ['DisplayArtistName', 'TPE1', 'artist', 'artistName'],
  album: ['ReleaseTitle', 'TALB', 'album', 'albumTitle'],
  isrc: ['ISRC', 'TSRC', 'isrc'],
  label: ['PLine', 'LabelName', 'TPUB', 'label', 'publisher'],
  genre: ['Genre', 'GenreText', 'TCON', 'genre'],
};
export const DURATION_ALIASES: Record<string, 's' | 'ms'> = {
  duration: 's',
  Duration: 's',
  durationSeconds: 's',
  length: 's',
  TLEN: 'ms',
  durationMs: 'ms',
  duration_ms: 'ms',
};
export const COUNT_ALIASES = ['streams', 'streamCount', 'stream_count', 'plays', 'playCount', 'play_count', 'spins'];
export const RANKING_ALIASES = [
  'chartPosition',
  'chart_position',
  'chart',
  'chartRank',
  'rank',
  'ranking',
  'peakPosition',
  'peak_position',
  'weeksOnChart',
  'billboardRank',
  'popularity',
];
export const DRM_ALIASES = ['drm', 'DRM', 'protection', 'drmProtected', 'protected', 'encrypted'];

const lower = (s: string) => s.toLowerCase();
const TEXT_BY_NAME = new Map(
  Object.entries(TEXT_ALIASES).flatMap(([field, names]) => names.map((n) => [lower(n), field as Field])),
);
const DURATION_BY_NAME = new Map(Object.entries(DURATION_ALIASES).map(([n, unit]) => [lower(n), unit]));
const COUNTS = new Set(COUNT_ALIASES.map(lower));
const RANKINGS = new Set(RANKING_ALIASES.map(lower));
const DRM = new Set(DRM_ALIASES.map(lower));

/** A DRM flag: true, "yes", a named scheme such as "FairPlay"; never "none", "false", 0 or empty. */
function isDrmFlag(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string') return !/^(|none|no|false|0|off|drm-free|unprotected)$/i.test(value.trim());
  return false;
}

const kindOf = (value: unknown) =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'an array'
      : typeof value === 'object'
        ? 'an object'
        : `a ${typeof value}`;

/** Reads metadata under any accepted name into one normalised record. Unknown names are ignored. */
export function normalise(raw: Record<string, unknown>): NormalisedMetadata {
  const out: NormalisedMetadata = { counts: {}, rankings: {}, drm: false, drmEvidence: [], unusable: {} };
  const flag = (name: string, value: unknown) => {
    out.drm = true;
    out.drmEvidence.push(`${name}: ${JSON.stringify(value)}`);
  };
  for (const [name, value] of Object.entries(raw)) {
    const key = lower(name);
    const text = TEXT_BY_NAME.get(key);
    if (text) {
      if (out[text] !== undefined) continue;
      if (typeof value === 'string' && value.trim() !== '') out[text] = value.trim();
      // Kept so a rejection can say what was wrong with the field that was sent.
      else
        out.unusable[text] ??= typeof value === 'string' ? `${name} is blank` : `${name} is ${kindOf(value)}, not text`;
    } else if (DURATION_BY_NAME.has(key) && out.duration === undefined)
      out.duration = { value, unit: DURATION_BY_NAME.get(key)!, field: name };
    else if (COUNTS.has(key)) out.counts[name] = value;
    else if (RANKINGS.has(key)) out.rankings[name] = value;
    else if (DRM.has(key) && isDrmFlag(value)) flag(name, value);
    else if (key === 'codec' && typeof value === 'string' && value.toUpperCase() === 'DRM') flag(name, value);
  }
  for (const field of Object.keys(out.unusable) as Field[]) if (out[field] !== undefined) delete out.unusable[field];
  return out;
}
