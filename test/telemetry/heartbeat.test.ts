import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import type { TelemetryStore } from '../../api/store/types.ts';
import type { TelemetrySnapshot } from '../../api/telemetry/ledger/ledger.ts';
import { createClassifier } from '../../api/telemetry/classification/classify.ts';
import { createTelemetry } from '../../api/telemetry/telemetry.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';
import { createOperatorTraffic } from '../../api/telemetry/operator-traffic.ts';

afterEach(() => vi.useRealTimers());

describe('telemetry saving', () => {
  it('saves when counts changed, and at least every 5 minutes when they did not (a live process is not taken for a stopped one)', async () => {
    vi.useFakeTimers();
    const saves: number[] = [];
    const store: TelemetryStore<TelemetrySnapshot> = {
      load: async () => null,
      save: async (s) => void saves.push(s.observedRequests),
      others: async () => [],
    };
    const telemetry = await createTelemetry({
      funnelStepOf,
      classify: createClassifier([]),
      resolver: { reverse: async () => [], resolve: async () => [] },
      families: [],
      ownTraffic: createOperatorTraffic([]),
      fetchDirectory: async () => Promise.reject(new Error('no key directories here')),
      store,
      baitPaths: [],
      logger: pino({ level: 'silent' }),
      flushMs: 1000,
    });
    telemetry.observe({
      method: 'GET',
      path: '/',
      host: 'h',
      userAgent: 'curl/8.5.0',
      status: 200,
      durationMs: 1,
      remoteAddress: '127.0.0.1',
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect(saves).toEqual([1]);
    await vi.advanceTimersByTimeAsync(4 * 60_000);
    expect(saves).toEqual([1]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(saves).toEqual([1, 1]);
    await telemetry.close();
  });
});
