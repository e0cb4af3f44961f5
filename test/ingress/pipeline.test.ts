import { describe, expect, it } from 'vitest';
import { normalise } from '../../api/ingress/aliases.ts';
import { parseDuration } from '../../api/ingress/duration.ts';
import { runPipeline } from '../../api/ingress/pipeline.ts';

const run = (raw: Record<string, unknown>) => runPipeline(normalise(raw));

describe('durations', () => {
  it.each([
    [205, 's', 205],
    ['205', 's', 205],
    ['205.5', 's', 205.5],
    [205000, 'ms', 205],
    ['205000', 'ms', 205],
    ['3:25', 's', 205],
    ['03:25', 's', 205],
    ['1:02:03', 's', 3723],
    ['PT3M25S', 's', 205],
    ['PT1H', 's', 3600],
    ['PT0.5S', 's', 0.5],
    ['P1D', 's', 86400],
  ] as const)('%s (%s) is %d seconds', (value, unit, seconds) => {
    expect(parseDuration(value, unit)).toBe(seconds);
  });

  it.each([
    undefined,
    null,
    0,
    -3,
    '0',
    '-3',
    'abc',
    '3:75',
    'PT',
    'P',
    'PT3X',
    '',
    NaN,
    Infinity,
    86401,
    'P2D',
    true,
    {},
  ])('%s is invalid', (value) => {
    expect(parseDuration(value)).toBeNull();
  });
});

describe('aliases', () => {
  it('reads DDEX ERN names', () => {
    const m = normalise({
      DisplayTitleText: 'T',
      DisplayArtistName: 'A',
      ISRC: 'qzaaa2600012',
      Duration: 'PT3M25S',
      PLine: '(P) 2026 Label',
      Genre: 'Ambient',
    });
    expect(m).toMatchObject({
      title: 'T',
      artist: 'A',
      isrc: 'qzaaa2600012',
      label: '(P) 2026 Label',
      genre: 'Ambient',
      duration: { value: 'PT3M25S', unit: 's' },
    });
  });
  it('reads ID3 frames, TLEN in milliseconds', () => {
    expect(normalise({ TIT2: 'T', TPE1: 'A', TLEN: '205000', TSRC: 'X' })).toMatchObject({
      title: 'T',
      artist: 'A',
      isrc: 'X',
      duration: { unit: 'ms' },
    });
    expect(run({ TIT2: 'T', TLEN: 205000 }).stem.durationSeconds).toBe(205);
  });
  it('reads plain names case-insensitively', () => {
    expect(normalise({ Title: 'T', ARTIST: 'A', album: 'B', label: 'L', genre: 'G', duration: '3:25' })).toMatchObject({
      title: 'T',
      artist: 'A',
      album: 'B',
      label: 'L',
      genre: 'G',
    });
  });
  it.each([{ drm: true }, { protection: 'FairPlay' }, { drmProtected: 1 }, { codec: 'DRM' }, { DRM: 'yes' }])(
    'flags DRM from %o',
    (flag) => {
      expect(normalise({ title: 'T', duration: 1, ...flag }).drm).toBe(true);
    },
  );
  it.each([{ drm: false }, { protection: 'none' }, { drm: 0 }, { drm: '' }])('does not flag %o', (flag) => {
    expect(normalise({ title: 'T', duration: 1, ...flag }).drm).toBe(false);
  });
});

describe('SCRUB, MAP, SEAL', () => {
  it('drops every commercial ranking and says which', () => {
    const r = run({ title: 'T', duration: 200, chartPosition: 1, peakPosition: 3, weeksOnChart: 9, popularity: 88 });
    expect(r.pipeline[0]).toEqual({
      stage: 'SCRUB',
      dropped: ['chartPosition', 'peakPosition', 'popularity', 'weeksOnChart'],
    });
    expect(JSON.stringify(r.stem)).not.toMatch(/chart|peak|popularity|weeks/i);
  });
  it('keeps stream and play counts only as legacyNoise', () => {
    const r = run({ title: 'T', duration: 200, streams: 1000, plays: '25', streamCount: -4 });
    expect(r.stem.legacyNoise).toEqual({ streams: 1025 });
    expect(r.pipeline[1]).toMatchObject({ stage: 'MAP', legacyNoise: { streams: 1025 } });
    expect(Object.keys(r.stem)).not.toContain('streams');
  });
  it('seals to the same id whatever the key order or the alias', () => {
    const a = run({ title: 'T', artist: 'A', duration: 205, streams: 5 });
    const b = run({ streams: 5, duration: '3:25', DisplayArtistName: 'A', DisplayTitleText: 'T' });
    expect(a.stem.id).toBe(b.stem.id);
    expect(a.stem.id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(run({ title: 'T2', artist: 'A', duration: 205, streams: 5 }).stem.id).not.toBe(a.stem.id);
  });
  it('is a sandbox that never writes reward', () => {
    const r = run({ title: 'T', duration: 1 });
    expect(r).toMatchObject({ status: 'SANDBOX', rewardWrite: false });
    expect(JSON.stringify(r)).not.toMatch(/signalStrength|standing|integrity/);
  });
  it.each([
    [{ drm: true }, 'DRM_REJECT'],
    [{ drm: true, duration: -1 }, 'DRM_REJECT'],
    [{ duration: 200 }, 'TITLE_REQUIRED'],
    [{ title: '   ', duration: 200 }, 'TITLE_REQUIRED'],
    [{ title: 'T' }, 'DURATION_INVALID'],
    [{ title: 'T', duration: 0 }, 'DURATION_INVALID'],
    [{ title: 'T', duration: 'soon' }, 'DURATION_INVALID'],
    [{ title: 'T', duration: 90000 }, 'DURATION_INVALID'],
  ] as const)('rejects %o with %s (422)', (raw, code) => {
    expect(() => run(raw as Record<string, unknown>)).toThrow(expect.objectContaining({ name: 'DomainError', code }));
  });
});
