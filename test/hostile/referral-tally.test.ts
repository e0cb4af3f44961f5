import { describe, expect, it } from 'vitest';
import { LEDGER_LIMITS } from '../../api/telemetry/ledger/ledger.ts';
import { memoryTelemetry, request } from '../helpers/telemetry.ts';

// Visits "from ChatGPT" from more addresses than an hour's tally keeps, each with a Referer never
// seen before: the tally stops at LEDGER_LIMITS.referralClients addresses (the hour's later ones
// count uncapped, nothing more is kept), an address it holds keeps its cap, and every visit within
// the rules is counted.
const PERSON = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36';

describe('the referral tally under a flood of distinct addresses', () => {
  it(`keeps at most ${LEDGER_LIMITS.referralClients} addresses an hour: past them new ones count uncapped, tallied ones stay capped`, async () => {
    const t = await memoryTelemetry();
    const visit = (remoteAddress: string, i: number) =>
      t.observe(request({ userAgent: PERSON, remoteAddress, referral: { referer: `https://chatgpt.com/c/${i}` } }));
    const flood = 4 * LEDGER_LIMITS.referralClients;
    const address = (i: number) => `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;
    for (let i = 0; i < flood; i++) visit(address(i), i);
    const visits = () => t.snapshot().referrals!.OpenAI!.visits;
    expect(visits()).toBe(flood);
    // The first address is tallied: its share is the cap. One past the tally is not: all count.
    for (let i = 0; i < 20; i++) visit(address(0), flood + i);
    expect(visits()).toBe(flood + LEDGER_LIMITS.referralsPerClientHour - 1);
    for (let i = 0; i < 20; i++) visit(address(flood + 1), 2 * flood + i);
    expect(visits()).toBe(flood + LEDGER_LIMITS.referralsPerClientHour - 1 + 20);
    await t.close();
  });
});
