import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createBandwidth, pauser } from '../../api/gateway/bandwidth.ts';
import { waitFor } from '../helpers/wait.ts';

describe('createBandwidth', () => {
  it('lets a quarter of a second of bytes through at once, then makes the reader wait off its debt', () => {
    let now = 0;
    const bandwidth = createBandwidth(1000, () => now);
    expect(bandwidth.take(250)).toBe(0);
    // 100 bytes past the burst: 100 ms at 1,000 bytes a second.
    expect(bandwidth.take(100)).toBe(100);
    now = 100;
    expect(bandwidth.take(0)).toBe(0);
  });

  it('holds every reader together to the rate: whoever takes last waits for all the debt', () => {
    let now = 0;
    const bandwidth = createBandwidth(1000, () => now);
    bandwidth.take(250);
    expect(bandwidth.take(500)).toBe(500);
    expect(bandwidth.take(500)).toBe(1000);
  });

  it('never saves more than one burst however long it idles', () => {
    let now = 0;
    const bandwidth = createBandwidth(1000, () => now);
    now = 60_000;
    expect(bandwidth.take(250)).toBe(0);
    expect(bandwidth.take(1)).toBe(1);
  });
});

describe('pauser', () => {
  it('resumes a stream only once every reason to hold it has ended', async () => {
    const stream = new PassThrough();
    stream.resume();
    const flow = pauser(stream);
    flow.pause('disk');
    flow.wait(20);
    expect(stream.isPaused()).toBe(true);
    expect(flow.held).toBe(true);
    flow.end('disk');
    expect(stream.isPaused()).toBe(true);
    await waitFor(() => !stream.isPaused(), { what: 'the stream resumed' });
    expect(stream.isPaused()).toBe(false);
    expect(flow.held).toBe(false);
  });

  it('does not hold for a wait of 0, and stop() leaves the stream alone', () => {
    const stream = new PassThrough();
    stream.resume();
    const flow = pauser(stream);
    flow.wait(0);
    expect(stream.isPaused()).toBe(false);
    flow.wait(1000);
    flow.stop();
    expect(flow.held).toBe(false);
    expect(stream.isPaused()).toBe(true);
  });
});
