import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import {
  CRAFTED_CONTAINERS,
  craftedContainer,
  mp3WithId3,
  mp4WithSampleEntry,
  wavWithInfo,
} from '../helpers/audio-files.ts';
import { waitFor } from '../helpers/wait.ts';
import { rawClient } from './raw.ts';

// Uploads have a CPU budget: a crafted container of tiny elements is refused by the structure walk
// before music-metadata runs, and a parse that runs long anyway is ended by its thread's CPU budget
// or the moment its client leaves. The CPU is the server process's own (/proc/PID/stat: every
// thread, the parse threads too), never wall time.
const MB = 1024 * 1024;
const TICKS_PER_SECOND = 100;

/** CPU seconds the process has used so far (user + system), from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

async function upload(server: ServerProcess, body: Uint8Array, type = 'application/octet-stream') {
  const res = await fetch(`${server.url}/api/ingress/audio`, {
    method: 'POST',
    headers: { 'Content-Type': type },
    body: body as Uint8Array<ArrayBuffer>,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('crafted containers: refused before the parse', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0' });
  });
  afterAll(async () => {
    await server.stop();
  });

  const cases = [...CRAFTED_CONTAINERS.map((kind) => [kind, 4 * MB] as const), ['Matroska', 16 * MB] as const];
  it.each(cases)(
    'a %s file of %i bytes of tiny elements: 422 AUDIO_TOO_COMPLEX for under 1 s of server CPU',
    async (kind, size) => {
      const file = craftedContainer(kind, size);
      const before = cpuSeconds(server.child.pid!);
      const answer = await upload(server, file);
      const spent = cpuSeconds(server.child.pid!) - before;
      expect(answer.status).toBe(422);
      expect(answer.body).toMatchObject({ code: 'AUDIO_TOO_COMPLEX', limit: 20_000 });
      expect(answer.body.detail).toMatch(
        new RegExp(`The ${kind === 'ID3' ? 'ID3' : kind} file holds more than 20000 `),
      );
      // Unbounded, these cost 1.2-12 s (16 MB Matroska about 40 s).
      expect(spent).toBeLessThan(1);
    },
  );

  it('real small WAV, MP3 and MP4 files still parse (on the parse thread)', async () => {
    const wav = await upload(server, wavWithInfo({ title: 'Threaded', artist: 'A' }, 1), 'audio/wav');
    expect(wav.status).toBe(201);
    expect(wav.body.stem).toMatchObject({ title: 'Threaded', durationSeconds: 1 });
    const mp3 = await upload(server, mp3WithId3({ TIT2: 'Threaded MP3', TLEN: '1000' }), 'audio/mpeg');
    expect(mp3.status).toBe(201);
    expect(mp3.body.stem).toMatchObject({ title: 'Threaded MP3', durationSeconds: 1 });
    const mp4 = await upload(server, mp4WithSampleEntry('enca'), 'audio/mp4');
    expect(mp4.status).toBe(422);
    expect(mp4.body.code).toBe('DRM_REJECT');
  });
});

describe('the CPU budget of the parse thread, with the structure walk allowing anything', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({
      DATA_DIR: ':memory:',
      WRITE_RATE_LIMIT: '0',
      AUDIO_MAX_ELEMENTS: String(1e9),
      AUDIO_PARSE_CPU_MS: '300',
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  it.each(CRAFTED_CONTAINERS)(
    'a 4 MB crafted %s file that passes the walk is ended at its CPU budget: 422, under 1 s of CPU',
    async (kind) => {
      const from = server.logs.length;
      const before = cpuSeconds(server.child.pid!);
      const answer = await upload(server, craftedContainer(kind, 4 * MB));
      const spent = cpuSeconds(server.child.pid!) - before;
      expect(answer.status).toBe(422);
      expect(answer.body).toMatchObject({ code: 'AUDIO_TOO_COMPLEX', limit: 300 });
      expect(answer.body.detail).toMatch(/more than 300 ms of CPU/);
      expect(spent).toBeLessThan(1);
      const line = JSON.parse(await server.waitForLog((l) => l.includes('audio parse stopped'), { from }));
      expect(line).toMatchObject({ reason: 'cpu budget' });
      expect(line.cpuMs).toBeGreaterThanOrEqual(300);
    },
  );
});

describe('a client that leaves stops its parse', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    // One parse thread, no element cap and a budget of a minute: only the client's leaving can end this parse early.
    server = await startServerProcess({
      DATA_DIR: ':memory:',
      WRITE_RATE_LIMIT: '0',
      AUDIO_PARSE_WORKERS: '1',
      AUDIO_MAX_ELEMENTS: String(1e9),
      AUDIO_PARSE_CPU_MS: '60000',
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('the parse thread is ended when the client hangs up, and the next upload is read at once', async () => {
    const file = craftedContainer('Matroska', 16 * MB);
    const pid = server.child.pid!;
    const client = await rawClient(server);
    const from = server.logs.length;
    const before = cpuSeconds(pid);
    client.socket.write(
      `POST /api/ingress/audio HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${file.length}\r\n\r\n`,
    );
    client.socket.write(file);
    // The parse is under way once the server spends CPU well past what reading 16 MB costs.
    await waitFor(() => cpuSeconds(pid) - before, {
      until: (s) => s > 0.5,
      timeoutMs: 20_000,
      what: 'the parse to run',
    });
    client.socket.destroy();
    const line = JSON.parse(
      await server.waitForLog((l) => l.includes('audio parse stopped'), { from, timeoutMs: 10_000 }),
    );
    expect(line.reason).toBe('client closed');
    // Left running, this parse would take about 40 s of CPU on the only parse thread. It was ended:
    // the next upload gets the thread and is answered, and the server spends little CPU meanwhile.
    const after = cpuSeconds(pid);
    const next = await upload(server, wavWithInfo({ title: 'After', artist: 'A' }, 1), 'audio/wav');
    expect(next.status).toBe(201);
    expect(cpuSeconds(pid) - after).toBeLessThan(1);
    expect(line.cpuMs).toBeGreaterThan(0);
    expect(line.cpuMs).toBeLessThan(30_000);
  });
});
