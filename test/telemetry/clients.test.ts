import { describe, expect, it } from 'vitest';
import { LEDGER_LIMITS } from '../../api/telemetry/ledger/ledger.ts';
import { memoryTelemetry, request } from '../helpers/telemetry.ts';

// The pool's evidence counts clients as every per-client limit does (clientKey): an IPv4 address,
// or an IPv6 /64, which one host can rotate through at no cost.
describe('clients as the wall counts them', () => {
  it('takes the addresses of one IPv6 /64 for one client: its invented names earn the one client its rows', async () => {
    const t = await memoryTelemetry();
    const invent = (name: string, remoteAddress: string) =>
      t.observe(request({ userAgent: `${name}-bot/1.0`, remoteAddress }));
    const pooled = (prefix: string) =>
      Object.values(t.snapshot().families).filter((r) => r.pooled && r.family.startsWith(prefix)).length;
    for (let i = 0; i < 40; i++) invent(`rotating${i}`, `2001:db8:7:7::${i.toString(16)}`);
    expect(pooled('rotating')).toBe(LEDGER_LIMITS.clientUnitsPerHour);
    // Forty /64s are forty clients.
    for (let i = 0; i < 40; i++) invent(`spread${i}`, `2001:db8:7:${(i + 8).toString(16)}::1`);
    expect(pooled('spread')).toBe(40);
    await t.close();
  });
});
