import { describe, expect, it } from 'vitest';
import { PENDING_EVENTS } from '../../api/telemetry/telemetry.ts';
import { GOOGLEBOT, memoryTelemetry, request } from '../helpers/telemetry.ts';
import { waitFor } from '../helpers/wait.ts';

// One address claims Googlebot (outside its published ranges: reverse DNS decides) and sends 10,000
// requests of distinct paths while its lookup runs. What a pending claim holds is bounded by
// PENDING_EVENTS distinct requests: past them, requests are counted without their paths. Once the
// lookup proves the claim, the held ones are added, no more.
describe('requests of a claim whose check has not answered', () => {
  it(`holds at most PENDING_EVENTS (${PENDING_EVENTS}) distinct ones, however many come`, async () => {
    let answer!: (names: string[]) => void;
    const ptr = new Promise<string[]>((resolve) => (answer = resolve));
    const t = await memoryTelemetry({
      resolver: { reverse: () => ptr, resolve: async () => ['192.0.2.66'] },
    });
    const flood = 10_000;
    for (let i = 0; i < flood; i++)
      t.observe(request({ userAgent: GOOGLEBOT, remoteAddress: '192.0.2.66', path: `/p${i}` }));
    expect(t.snapshot().families.Googlebot).toMatchObject({ requests: flood, paths: {} });
    answer(['crawl-192-0-2-66.googlebot.com']);
    const row = await waitFor(() => t.snapshot().families.Googlebot!, {
      until: (r) => r.verified === flood,
      what: 'the lookup settled',
    });
    expect(Object.values(row.paths).reduce((a, b) => a + b, 0)).toBe(PENDING_EVENTS);
    await t.close();
  });
});
