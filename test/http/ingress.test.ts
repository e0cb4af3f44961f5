import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mp3WithId3, mp4WithSampleEntry, wavWithInfo } from '../helpers/audio-files.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ WRITE_RATE_LIMIT: '0', INGRESS_UPLOAD_LIMIT_BYTES: String(200 * 1024) });
});
afterAll(async () => {
  await server.stop();
});

const url = () => `${server.url}/api/ingress/audio`;
const upload = (bytes: Buffer, type: string) =>
  fetch(url(), { method: 'POST', headers: { 'Content-Type': type }, body: new Uint8Array(bytes) });
const postJson = (body: unknown) =>
  fetch(url(), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const dataFiles = () =>
  readdirSync(server.dataDir)
    .map((f) => `${f}:${readFileSync(join(server.dataDir, f)).length}`)
    .sort();

describe('POST /api/ingress/audio with files', () => {
  it('reads a WAV with RIFF INFO tags', async () => {
    const res = await upload(wavWithInfo({ title: 'Wav Title', artist: 'Wav Artist' }, 3), 'audio/wav');
    expect(res.status).toBe(201);
    expect((await res.json()).stem).toMatchObject({ title: 'Wav Title', artist: 'Wav Artist', durationSeconds: 3 });
  });

  it('reads an MP3 with ID3v2 TIT2, TPE1, TLEN and TSRC', async () => {
    const res = await upload(
      mp3WithId3({ TIT2: 'Mp3 Title', TPE1: 'Mp3 Artist', TLEN: '205000', TSRC: 'QZAAA2600012' }),
      'audio/mpeg',
    );
    expect(res.status).toBe(201);
    expect((await res.json()).stem).toMatchObject({
      title: 'Mp3 Title',
      artist: 'Mp3 Artist',
      isrc: 'QZAAA2600012',
      durationSeconds: 205,
    });
  });

  it('rejects an encrypted MP4 (enca sample entry) with DRM_REJECT, and takes a plain one', async () => {
    const locked = await upload(mp4WithSampleEntry('enca'), 'audio/mp4');
    expect(locked.status).toBe(422);
    expect((await locked.json()).code).toBe('DRM_REJECT');
    const plain = new FormData();
    plain.set('file', new Blob([new Uint8Array(mp4WithSampleEntry('mp4a'))], { type: 'audio/mp4' }), 'track.m4a');
    plain.set('metadata', JSON.stringify({ title: 'Named beside the file' }));
    const ok = await fetch(url(), { method: 'POST', body: plain });
    expect(ok.status).toBe(201);
    expect((await ok.json()).stem).toMatchObject({ title: 'Named beside the file', durationSeconds: 205 });
  });

  it('takes a multipart upload and needs a title from the tags or the metadata field', async () => {
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(wavWithInfo({}, 1))], { type: 'audio/wav' }), 'untitled.wav');
    const res = await fetch(url(), { method: 'POST', body: form });
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe('TITLE_REQUIRED');
  });

  it('answers a file that is not audio with 415 problem+json', async () => {
    for (const [bytes, type] of [
      [Buffer.from('hello, not audio'), 'audio/mpeg'],
      [Buffer.from('%PDF-1.4\n'), 'audio/wav'],
      [Buffer.alloc(0), 'audio/ogg'],
    ] as const) {
      const res = await upload(bytes, type);
      expect(res.status, type).toBe(415);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
    }
  });

  it('refuses an upload over the configured limit with 413', async () => {
    const res = await upload(wavWithInfo({ title: 'Big' }, 30), 'audio/wav');
    expect(res.status).toBe(413);
    expect((await res.json()).code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses media types the route does not take with 415', async () => {
    const res = await fetch(url(), { method: 'POST', headers: { 'Content-Type': 'text/csv' }, body: 'title,duration' });
    expect(res.status).toBe(415);
  });
});

describe('POST /api/ingress/audio with JSON metadata', () => {
  it('runs SCRUB, MAP and SEAL', async () => {
    const res = await postJson({
      DisplayTitleText: "What's Next",
      DisplayArtistName: 'Agent Node',
      Duration: 'PT3M25S',
      chartPosition: 12,
      streams: 120000,
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body).toMatchObject({ status: 'SANDBOX', rewardWrite: false });
    expect(body.pipeline.map((s: any) => s.stage)).toEqual(['SCRUB', 'MAP', 'SEAL']);
    expect(body.pipeline[0].dropped).toEqual(['chartPosition']);
    expect(body.stem.legacyNoise).toEqual({ streams: 120000 });
    expect(body.pipeline[2].id).toBe(body.stem.id);
  });

  it('answers each rejection with 422 and its code', async () => {
    for (const [body, code] of [
      [{ title: 'T', duration: 100, protection: 'FairPlay' }, 'DRM_REJECT'],
      [{ duration: 100 }, 'TITLE_REQUIRED'],
      [{ title: 'T', duration: 'PT0S' }, 'DURATION_INVALID'],
    ] as const) {
      const res = await postJson(body);
      expect(res.status).toBe(422);
      expect((await res.json()).code).toBe(code);
    }
  });

  it('answers bad JSON bodies with 4xx problems', async () => {
    for (const body of [
      '{',
      '[]',
      '"x"',
      JSON.stringify({ title: { nested: true } }),
      JSON.stringify({ title: 'x'.repeat(3000), duration: 1 }),
    ]) {
      const res = await fetch(url(), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      expect(res.status, body.slice(0, 20)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
  });

  it('GET answers 405 with an example that ingests', async () => {
    const res = await fetch(url());
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    const { example } = await res.json();
    expect((await postJson(example)).status).toBe(201);
  });

  it('writes nothing: the data folder is unchanged after every kind of ingest', async () => {
    const before = dataFiles();
    await postJson({ title: 'T', duration: 1, streams: 5 });
    await upload(wavWithInfo({ title: 'W' }, 1), 'audio/wav');
    await postJson({ title: 'T' });
    expect(dataFiles()).toEqual(before);
    const scoreboard = await (await fetch(`${server.url}/api/scoreboard`)).json();
    expect(scoreboard.catches.total).toBe(0);
  });

  it('the descriptor lists what the route accepts', async () => {
    const d = await (await fetch(`${server.url}/api/ingress`)).json();
    expect(d.accepts.media_types).toContain('application/json');
    expect(d.accepts.fields.title).toEqual(expect.arrayContaining(['DisplayTitleText', 'TIT2', 'title']));
    expect(d.accepts.fields.duration).toEqual(expect.arrayContaining(['Duration', 'TLEN', 'duration']));
  });
});

// The file's evidence against the caller's metadata, over HTTP.
describe('the file holds against the caller, and every rejection says what was wrong', () => {
  const multipart = (file: Buffer, type: string, metadata: unknown) => {
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(file)], { type }), 'track.m4a');
    form.set('metadata', JSON.stringify(metadata));
    return fetch(url(), { method: 'POST', body: form });
  };

  it.each([{ drm: false }, { drm: 'no' }, { drm: 0 }])(
    'an encrypted M4A stays DRM_REJECT with metadata %o',
    async (flag) => {
      for (const entry of ['enca', 'drms']) {
        const res = await multipart(mp4WithSampleEntry(entry), 'audio/mp4', { title: 'Sealed anyway?', ...flag });
        expect(res.status, entry).toBe(422);
        const body = await res.json();
        expect(body.code).toBe('DRM_REJECT');
        expect(body.detail).toContain(`<${entry}>`);
      }
    },
  );

  it('20 KB of random bytes sent as audio/mpeg is 415 NOT_AUDIO', async () => {
    // A fixed xorshift stream: random-looking, and the same every run.
    const bytes = Buffer.alloc(20 * 1024);
    let x = 0x2545f491;
    for (let i = 0; i < bytes.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      bytes[i] = x & 0xff;
    }
    const res = await upload(bytes, 'audio/mpeg');
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).code).toBe('NOT_AUDIO');
  });

  it('a WAV whose data chunk is empty is told so, not that a duration is required', async () => {
    const res = await upload(wavWithInfo({ title: 'Silent' }, 0), 'audio/wav');
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.code).toBe('DURATION_INVALID');
    expect(body.detail).toMatch(/data chunk is empty/);
    expect(body.detail).not.toMatch(/required/);
  });

  it('MAP counts "1,234" and reports what it cannot read', async () => {
    const counted = await (await postJson({ title: 'T', duration: 1, streams: '1,234' })).json();
    expect(counted.stem.legacyNoise).toEqual({ streams: 1234 });
    expect(counted.pipeline[1]).toEqual({
      stage: 'MAP',
      legacyNoise: { streams: 1234 },
      from: ['streams'],
      unreadable: [],
    });
    const unread = await (await postJson({ title: 'T', duration: 1, streams: 'about a million' })).json();
    expect(unread.pipeline[1]).toMatchObject({
      legacyNoise: {},
      from: [],
      unreadable: [{ field: 'streams', value: 'about a million' }],
    });
  });

  it('a rejection names the field and what was wrong with it', async () => {
    for (const [body, code, detail] of [
      [{ title: ' ', duration: 1 }, 'TITLE_REQUIRED', /title is blank/],
      [{ title: 'T', Duration: 'PT0S' }, 'DURATION_INVALID', /Duration "PT0S" is zero/],
      [{ title: 'T', duration: 1, protection: 'FairPlay' }, 'DRM_REJECT', /protection: "FairPlay"/],
    ] as const) {
      const problem = await (await postJson(body)).json();
      expect(problem.code).toBe(code);
      expect(problem.detail).toMatch(detail);
    }
  });
});
