import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { ALERT_LIMITS, createAlerts, type Alert } from '../../api/telemetry/alerts/alerts.ts';
import { telemetryRulesOf } from '../../api/telemetry/telemetry.ts';
import { GOOGLEBOT, memoryTelemetry, request } from '../helpers/telemetry.ts';
import { waitFor } from '../helpers/wait.ts';

// One address sends every product token of the bot table (curated and generated) to a bait path
// and to a path whose AI usage preference refuses training: some 4,000 new-family, robots and
// preference alerts about the table's families; another, 64 spellings of one token. Sixty invented
// names come from two addresses each, then one address sends all sixty to the bait path. Before,
// the 4,096 pairs the alerts remembered filled up, and 25 spoofed Googlebot claims raised no
// spoofing alert for an hour (nor a line in the log).
describe("the alerts' memory under names clients write", () => {
  it("never crowds out the table's families, keeps other names within their budget, and one client within its share", async () => {
    const content = await loadContent('content');
    const { tableFamilies } = telemetryRulesOf(content);
    const raised: Alert[] = [];
    const said: string[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n').filter(Boolean)) {
            const line = JSON.parse(l) as { msg: string; alert?: Alert };
            if (line.alert) raised.push(line.alert);
            else said.push(line.msg);
          }
          done();
        },
      }),
    );
    const alerts = createAlerts({
      tableFamilies,
      logger,
      windowMs: 3_600_000,
      spoofThreshold: 20,
      maxQueue: 100,
      timeoutMs: 5000,
    });
    const t = await memoryTelemetry({ alerts });
    const observe = (userAgent: string, remoteAddress: string, path: string, status = 404) =>
      t.observe(request({ userAgent, remoteAddress, path, status }));
    const compatible = (name: string) => `Mozilla/5.0 (compatible; ${name}/1.0)`;

    const tokens = [...content.botFamilies.families, ...content.botFamiliesGenerated.families].flatMap((f) => f.tokens);
    for (const path of ['/trap/a', '/bot-wall.json'])
      for (const token of tokens) observe(compatible(token), '203.0.113.7', path);
    const flood = raised.length;
    // Spellings of a table family's token (device-detector's families are named as written): a
    // ledger row each, and claims of that one family.
    const spellings = Array.from({ length: 64 }, (_, i) =>
      [...'collectd'].map((ch, k) => ((i >> k) & 1 ? ch.toUpperCase() : ch)).join(''),
    );
    for (const name of spellings) observe(compatible(name), '203.0.113.8', '/trap/a');
    // Sixty invented names, each from two addresses of its own, on an ordinary path: pool rows.
    const invented = Array.from({ length: 60 }, (_, i) => `Invented${i}bot`);
    invented.forEach((name, i) => {
      for (const k of [1, 2]) observe(compatible(name), `198.51.${100 + (i >> 7)}.${(2 * i + k) & 255}`, '/', 200);
    });
    // One address sends them all to the bait path, then another address the last of them.
    for (const name of invented) observe(compatible(name), '192.0.2.200', '/trap/a');
    observe(compatible(invented.at(-1)!), '192.0.2.201', '/trap/a');
    // A spoofer of Googlebot: its claims fail verification, each lookup answered before the next claim.
    for (let i = 1; i <= 25; i++) {
      observe(GOOGLEBOT, `192.0.2.${i}`, '/', 200);
      await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => t.snapshot().families.Googlebot?.failed, { until: (n) => n === 25, what: '25 failed claims' });

    // The spoofing alert is raised, and nothing about the table's families was refused.
    expect(raised.filter((a) => a.kind === 'spoofing').map((a) => a.family)).toEqual(['Googlebot']);
    expect(said.filter((m) => /is full/.test(m))).toEqual([]);
    expect(flood).toBeGreaterThan(3500);
    expect(raised.filter((a) => a.family.toLowerCase() === 'collectd').map((a) => a.kind)).toEqual([
      'new-family',
      'robots',
    ]);
    // Each invented name announced once; the one address's robots alerts its share, no more (said
    // once); the other address not held back by it.
    const about = (kind: string) => raised.filter((a) => a.kind === kind && a.family.startsWith('Invented'));
    expect(about('new-family')).toHaveLength(invented.length);
    expect(about('robots').map((a) => a.family)).toEqual([
      ...invented.slice(0, ALERT_LIMITS.poolPairsPerClient),
      invented.at(-1),
    ]);
    expect(said.filter((m) => /share of alerts about names the bot table does not know/.test(m))).toHaveLength(1);
    // What is remembered: the table's pairs within the table times the four kinds, the rest within its budget.
    const remembered = alerts.stats().remembered;
    expect(remembered.table).toBeGreaterThan(3500);
    expect(remembered.table).toBeLessThanOrEqual(tableFamilies.size * 4);
    expect(remembered.pool).toBeLessThanOrEqual(ALERT_LIMITS.poolPairs);
    await t.close();
  });
});
