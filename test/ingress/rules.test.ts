import { describe, expect, it } from 'vitest';
import { normalise } from '../../api/ingress/aliases.ts';
import { readAudioFile } from '../../api/ingress/audio-file.ts';
import { readDuration } from '../../api/ingress/duration.ts';
import { mergeEvidence } from '../../api/ingress/evidence.ts';
import { map, readCount, runPipeline } from '../../api/ingress/pipeline.ts';
import { audioContainerOf, mpegFrameLength, wavDataChunk } from '../../api/ingress/sniff.ts';
import { mp3WithId3, mp4WithSampleEntry, wavWithInfo } from '../helpers/audio-files.ts';

// The file's evidence holds against the caller, and every rejection
// says what was wrong.

/** Deterministic "random" bytes (a 32-bit xorshift), so the test never flakes. */
function noise(length: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
const problemOf = async (work: Promise<unknown>) =>
  (await work.then(
    () => null,
    (e: unknown) => e,
  )) as { name: string; code: string; message: string } | null;

describe('mergeEvidence: metadata may add a DRM flag, never clear one', () => {
  const locked = {
    title: 'From the file',
    duration: 205,
    drm: "the file's audio track is encrypted (<enca> sample entry)",
  };
  it.each([{ drm: false }, { drm: 'no' }, { drm: 0 }, { DRM: 'none', protection: false }])(
    'the file stays DRM-locked whatever the caller says: %o',
    (caller) => {
      const merged = mergeEvidence(locked, { title: 'Named beside', ...caller });
      expect(normalise(merged).drm).toBe(true);
      expect(merged.title).toBe('Named beside');
    },
  );
  it('the caller may add a flag the file does not carry, and fills in tags', () => {
    expect(normalise(mergeEvidence({ title: 'T', duration: 3 }, { protection: 'FairPlay' })).drm).toBe(true);
    expect(mergeEvidence({ title: 'T', duration: 3 }, { title: 'U' })).toEqual({ title: 'U', duration: 3 });
  });
  it('the rejection names the evidence', () => {
    expect(() => runPipeline(normalise(mergeEvidence(locked, { drm: false })))).toThrow(
      /DRM-locked content is rejected \(drm: "the file's audio track is encrypted \(<enca> sample entry\)"\)/,
    );
  });
});

describe('a body no parser recognises as audio is 415 NOT_AUDIO', () => {
  it('20 KB of random bytes sent as audio/mpeg is not audio', async () => {
    for (const seed of [1, 2, 3, 0x9e3779b9]) {
      const bytes = noise(20 * 1024, seed);
      expect(audioContainerOf(bytes), `seed ${seed}`).toBeNull();
      expect(await problemOf(readAudioFile(bytes, 'audio/mpeg'))).toMatchObject({
        name: 'DomainError',
        code: 'NOT_AUDIO',
      });
    }
  });
  it('recognises the containers the tests build, and a raw MPEG stream only when its frames chain', () => {
    expect(audioContainerOf(wavWithInfo({ title: 'x' }, 1))).toBe('WAVE');
    expect(audioContainerOf(mp3WithId3({ TIT2: 'x' }))).toBe('ID3');
    expect(audioContainerOf(mp4WithSampleEntry('mp4a'))).toBe('MP4');
    const frames = mp3WithId3({ TIT2: 'x' }).subarray(10 + 4 + 6 + 1 + 1); // past the ID3 tag: raw frames
    expect(mpegFrameLength(frames)).toBe(417);
    expect(audioContainerOf(frames)).toBe('MPEG');
    const broken = Buffer.concat([frames.subarray(0, 417), noise(2000, 7)]);
    broken[417] = 0; // the second frame is not where the first says
    expect(audioContainerOf(broken)).toBeNull();
  });
});

describe('a WAV with no samples says so', () => {
  it('an empty data chunk is DURATION_INVALID naming the data chunk, never "a duration is required"', async () => {
    const problem = await problemOf(readAudioFile(wavWithInfo({ title: 'Silent' }, 0), 'audio/wav'));
    expect(problem).toMatchObject({ name: 'DomainError', code: 'DURATION_INVALID' });
    expect(problem!.message).toMatch(/data chunk is empty \(0 bytes\)/);
    expect(problem!.message).not.toMatch(/required/);
  });
  it('reads the data chunk size', () => {
    expect(wavDataChunk(wavWithInfo({}, 1))).toEqual({ declared: 8000, present: 8000 });
    expect(wavDataChunk(wavWithInfo({}, 0))).toEqual({ declared: 0, present: 0 });
  });
});

describe('MAP reads what it can and reports the rest', () => {
  it.each([
    ['1,234', 1234],
    ['1 234 567', 1234567],
    ["1'234", 1234],
    ['1_000', 1000],
    ['1\u202f234', 1234],
    [' 120000 ', 120000],
    [5, 5],
  ])('%o is %d', (value, count) => {
    expect(readCount(value)).toEqual({ count });
  });
  it.each(['1,23', '1.234', '1,234.5', 'lots', '-5', '1,234 567', true, null, 1.5, -3])(
    '%o is reported, not counted',
    (value) => {
      expect(readCount(value)).toEqual({ problem: expect.any(String) });
    },
  );
  it('lists counted fields in from and the others in unreadable', () => {
    const mapped = map(normalise({ title: 'T', duration: 1, streams: '1,234', plays: 'lots', spins: 6 }));
    expect(mapped).toMatchObject({
      legacyNoise: { streams: 1240 },
      from: ['spins', 'streams'],
      unreadable: [{ field: 'plays', value: 'lots', problem: expect.stringContaining('not a whole number') }],
    });
    expect(map(normalise({ streams: 'lots' }))).toMatchObject({
      legacyNoise: {},
      from: [],
      unreadable: [{ field: 'streams' }],
    });
  });
});

describe('every rejection says what was wrong', () => {
  const reject = (raw: Record<string, unknown>) => {
    try {
      runPipeline(normalise(raw));
    } catch (error) {
      return error as { code: string; message: string };
    }
    throw new Error('accepted');
  };
  it.each([
    [{ title: '  ', duration: 1 }, 'TITLE_REQUIRED', /title is blank/],
    [{ TIT2: 12, duration: 1 }, 'TITLE_REQUIRED', /TIT2 is a number, not text/],
    [{ duration: 1 }, 'TITLE_REQUIRED', /none was sent/],
    [{ title: 'T' }, 'DURATION_INVALID', /none was sent and none was measured/],
    [{ title: 'T', Duration: 'PT0S' }, 'DURATION_INVALID', /Duration "PT0S" is zero/],
    [{ title: 'T', duration: -3 }, 'DURATION_INVALID', /duration -3 is negative/],
    [{ title: 'T', duration: '3:75' }, 'DURATION_INVALID', /duration "3:75" is not a duration/],
    [{ title: 'T', TLEN: 90_000_000 }, 'DURATION_INVALID', /TLEN 90000000 is 90000 s, over the limit of 24 hours/],
    [{ title: 'T', duration: 1, protection: 'FairPlay' }, 'DRM_REJECT', /protection: "FairPlay"/],
  ])('%o is %s: %s', (raw, code, detail) => {
    const error = reject(raw);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(detail);
  });
  it('readDuration says which rule a value breaks', () => {
    expect(readDuration('PT3M25S')).toEqual({ seconds: 205 });
    expect(readDuration(null)).toEqual({ problem: expect.stringContaining('null is not a duration') });
  });
});
