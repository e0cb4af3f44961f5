import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server.ts';
import { wavWithInfo } from '../helpers/audio-files.ts';

// Issue 14 row 4: what the server reads of uploads is bounded in bytes a second, over all clients
// together, so a flood of uploads costs it a bounded share of its CPU; the clients wait (TCP).
const RATE = 64 * 1024;
let server: ServerProcess;
beforeAll(async () => {
  // The idle timeout is shorter than the wait one 64 KiB chunk costs at this rate.
  server = await startServer({ DATA_DIR: ':memory:', WRITE_RATE_LIMIT: '0', UPLOAD_BYTES_PER_SECOND: String(RATE), BODY_IDLE_TIMEOUT_MS: '500' });
});
afterAll(async () => {
  await server.stop();
});

const upload = (seconds: number) =>
  fetch(`${server.url}/api/ingress/audio`, { method: 'POST', headers: { 'Content-Type': 'audio/wav' }, body: new Uint8Array(wavWithInfo({ title: `Slow ${seconds}`, artist: 'A' }, seconds)) });

describe('row 4: upload bandwidth', () => {
  it('reads two uploads at once no faster than UPLOAD_BYTES_PER_SECOND together, and does not take its own hold (longer than the idle timeout) for a stalled client', async () => {
    const started = performance.now();
    // Two bodies of 128,000 bytes of audio (8,000 bytes a second of WAV).
    const answers = await Promise.all([upload(16), upload(16)]);
    const elapsed = performance.now() - started;
    expect(answers.map((r) => r.status)).toEqual([201, 201]);
    // The bound: 256,000 bytes at 64 KiB a second, less the quarter second of burst and the last
    // 64 KiB chunk of each body (read before its wait): at least 1.6 s. At full speed: some ms.
    expect(elapsed).toBeGreaterThan(((2 * 128_000 - RATE / 4 - 2 * 64 * 1024) / RATE) * 1000);
  });
});
