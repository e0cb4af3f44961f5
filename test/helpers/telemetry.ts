import pino from 'pino';
import { loadContent } from '../../api/content/load.ts';
import { funnelStepOf } from '../../api/operations/paths.ts';
import { openMemoryStore } from '../../api/store/index.ts';
import type { ObservedRequest } from '../../api/telemetry/observed.ts';
import { createTelemetry, telemetryRulesOf, type TelemetryOptions } from '../../api/telemetry/telemetry.ts';

// Telemetry as the tests of its rules build it: the shipped content, an in-memory ledger, no DNS
// answer and no key directory unless a test gives its own, nothing logged.

export const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

/** Telemetry over the shipped content and an in-memory store; `over` replaces any option. */
export async function memoryTelemetry(over: Partial<TelemetryOptions> = {}) {
  return createTelemetry({
    funnelStepOf,
    ...telemetryRulesOf(await loadContent('content')),
    resolver: { reverse: async () => [], resolve: async () => [] },
    fetchDirectory: async () => Promise.reject(new Error('no key directories here')),
    store: openMemoryStore().telemetry,
    logger: pino({ level: 'silent' }),
    flushMs: 60_000,
    ...over,
  });
}

/** A GET of `/` on site.example from 192.0.2.1, answered 200, as the gateway reports it; `over` replaces any field. */
export const request = (over: Partial<ObservedRequest> & Pick<ObservedRequest, 'userAgent'>): ObservedRequest =>
  ({
    method: 'GET',
    path: '/',
    host: 'site.example',
    status: 200,
    durationMs: 1,
    remoteAddress: '192.0.2.1',
    ...over,
  }) as ObservedRequest;
