import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodingChoicesKept, ENCODING_CHOICES_KEPT } from '../../api/http/encoding.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { pool } from './probe.ts';

// The gateway keeps its Accept-Encoding choices by header value (api/http/encoding.ts): a client
// that sends a new value on every request must neither grow what is kept past its bound nor get a
// coding it did not ask for. In process, so the kept count is read directly.
let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

/** The Content-Encoding of GET /api/convert asked with this Accept-Encoding (node:http: fetch sends its own). */
const codingFor = (acceptEncoding: string) =>
  new Promise<string | undefined>((resolve, reject) => {
    const req = request(`${server.url}/api/convert`, { headers: { 'Accept-Encoding': acceptEncoding } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers['content-encoding']));
    });
    req.on('error', reject).end();
  });

describe('a client rotating its Accept-Encoding', () => {
  it('gets the coding each value asks for, and the kept choices stay within their bound', async () => {
    const ROTATIONS = 20 * ENCODING_CHOICES_KEPT;
    const wrong: string[] = [];
    let most = 0;
    await pool(ROTATIONS, 8, async (i) => {
      // Distinct values, up to the 256 characters a kept value may have, each naming a coding.
      const coding = i % 2 === 0 ? 'br' : 'gzip';
      const value = `x-${i}-${'y'.repeat(i % 200)}, ${coding}`;
      if ((await codingFor(value)) !== coding) wrong.push(value);
      most = Math.max(most, encodingChoicesKept());
    });
    expect(wrong).toEqual([]);
    expect(most).toBeGreaterThan(ENCODING_CHOICES_KEPT / 2);
    expect(most).toBeLessThanOrEqual(ENCODING_CHOICES_KEPT);
  });
});
