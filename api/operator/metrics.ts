import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ObservedRequest } from '../telemetry/observed.ts';
import type { JournalObserver } from '../store/embedded/journal.ts';
import type { TelemetrySnapshot } from '../telemetry/ledger/ledger.ts';
import {
  RDNS_MAX_IN_FLIGHT,
  RDNS_NAMES_CHECKED,
  RDNS_UNANSWERED_TTL_MS,
  type Unchecked,
  type VerifierStats,
} from '../telemetry/verification/verify.ts';
import { BUILD, STARTED_AT } from '../build-info.ts';

/** What the metrics read when scraped; set once telemetry exists. */
export interface MetricSources {
  ledger(): TelemetrySnapshot;
  verificationsInFlight(): number;
  /** Reverse-DNS verification since the process began: lookups, queries, requests not looked up. */
  dns?(): VerifierStats;
  /**
   * Web Bot Auth since the process began: key directory fetches, replayed signatures, unregistered
   * directories named, nonces the shared store did not claim.
   */
  webBotAuth?(): { directoryFetches: number; replays: number; unregistered: number; nonceClaimFailures: number };
  /** PostgreSQL, when it is the store: whether it answers, and the pool's connections. */
  database?(): { up: boolean; inUse: number; idle: number; waiting: number };
}

const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;

/**
 * The service's Prometheus metrics (prom-client): requests by operation and status class with
 * latency, journal writes, store errors, rate-limit refusals, the ledger's size, verifications in
 * flight, and prom-client's default process and event-loop metrics. Operations are named by the
 * caller (route names, `document`, `page`, `other`), never by raw path, so label sets stay bounded.
 */
export function createMetrics(operationOf: (method: string, path: string) => string) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let sources: MetricSources | undefined;

  const requests = new Counter({
    name: 'agentnode_http_requests_total',
    help: 'Finished HTTP requests by operation and status class.',
    labelNames: ['operation', 'status_class'],
    registers: [registry],
  });
  // Status codes and problem codes are bounded sets (HTTP's, api/problems/table.ts): 500, 502 and 503 apart.
  const answers = new Counter({
    name: 'agentnode_http_responses_total',
    help: 'Finished HTTP requests by status code and problem code ("" when the answer was no problem).',
    labelNames: ['status', 'code'],
    registers: [registry],
  });
  new Gauge({
    name: 'agentnode_build_info',
    help: 'The release this process runs: 1, labelled with its version, commit and Node.',
    labelNames: ['version', 'commit', 'node'],
    registers: [registry],
    collect() {
      this.set({ version: BUILD.version, commit: BUILD.commit, node: BUILD.node }, 1);
    },
  });
  new Gauge({
    name: 'agentnode_uptime_seconds',
    help: 'Seconds since this process started.',
    registers: [registry],
    collect() {
      this.set((Date.now() - STARTED_AT) / 1000);
    },
  });
  const database = (
    name: string,
    help: string,
    read: (d: NonNullable<ReturnType<NonNullable<MetricSources['database']>>>) => number,
  ) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const d = sources?.database?.();
        if (d) this.set(read(d));
      },
    });
  database(
    'agentnode_database_up',
    'PostgreSQL answers (1) or not (0): 0 from a call that met silence, or before the schema was checked, until one is answered.',
    (d) => (d.up ? 1 : 0),
  );
  database('agentnode_database_pool_in_use', 'Pooled PostgreSQL connections running a call.', (d) => d.inUse);
  database('agentnode_database_pool_idle', 'Pooled PostgreSQL connections open and free.', (d) => d.idle);
  database('agentnode_database_pool_waiting', 'Calls waiting for a pooled PostgreSQL connection.', (d) => d.waiting);
  const latency = new Histogram({
    name: 'agentnode_http_request_duration_seconds',
    help: 'Time from the request to its finished answer, by operation.',
    labelNames: ['operation'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'agentnode_rate_limit_refusals_total',
    help: 'Requests refused with 429 by the write rate limit.',
    registers: [registry],
  });
  const journalWrite = new Histogram({
    name: 'agentnode_journal_write_seconds',
    help: 'Durable journal writes (one per group of appends), embedded store.',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [registry],
  });
  const journalGroup = new Histogram({
    name: 'agentnode_journal_group_size',
    help: 'Appends made durable by one journal write (group commit).',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: 'agentnode_store_errors_total',
    help: 'Store writes the disk refused (each answered 503).',
    registers: [registry],
  });
  new Gauge({
    name: 'agentnode_ledger_families',
    help: "Bot families in this process's telemetry ledger.",
    registers: [registry],
    collect() {
      if (sources) this.set(Object.keys(sources.ledger().families).length);
    },
  });
  new Gauge({
    name: 'agentnode_ledger_bytes',
    help: "Size of this process's telemetry ledger as saved (JSON bytes).",
    registers: [registry],
    collect() {
      if (sources) this.set(Buffer.byteLength(JSON.stringify(sources.ledger())));
    },
  });
  new Gauge({
    name: 'agentnode_verifications_in_flight',
    help: 'Crawler verifications (reverse DNS) under way.',
    registers: [registry],
    collect() {
      if (sources) this.set(sources.verificationsInFlight());
    },
  });

  // A count the process keeps since start, as a counter advanced by what changed since the last scrape.
  const sinceStart = (name: string, help: string, read: () => number | undefined) => {
    let counted = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const now = read() ?? counted;
        this.inc(now - counted);
        counted = now;
      },
    });
  };
  sinceStart(
    'agentnode_dns_lookups_total',
    `Reverse-DNS lookups started to verify crawler claims (${RDNS_MAX_IN_FLIGHT} in flight at most, one a site; each is a PTR query and forward queries, all counted in agentnode_dns_queries_total).`,
    () => sources?.dns?.().lookups,
  );
  sinceStart(
    'agentnode_dns_queries_total',
    `DNS queries crawler verification asked its resolver for: a PTR a lookup, an A and an AAAA for each name confirmed (${RDNS_NAMES_CHECKED} a lookup at most).`,
    () => sources?.dns?.().queries,
  );
  const reasons: Record<Unchecked, number> = { busy: 0, site_busy: 0, site_unanswered: 0 };
  new Counter({
    name: 'agentnode_dns_unchecked_claims_total',
    help: `Requests claiming a crawler that reverse DNS could check but did not look up, counted unverifiable: reason busy (${RDNS_MAX_IN_FLIGHT} lookups in flight), site_busy (its site's lookup under way: its /24 or IPv6 /48), site_unanswered (its site's lookups went unanswered: none for ${RDNS_UNANSWERED_TTL_MS / 60_000} min).`,
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const now = sources?.dns?.().unchecked ?? reasons;
      for (const reason of Object.keys(reasons) as Unchecked[]) {
        this.inc({ reason }, now[reason] - reasons[reason]);
        reasons[reason] = now[reason];
      }
    },
  });

  // Web Bot Auth's counts since start.
  const webBotAuth = [
    [
      'directoryFetches',
      'agentnode_web_bot_auth_directory_fetches_total',
      'Key directory fetches for Web Bot Auth (registered directories only).',
    ],
    [
      'replays',
      'agentnode_web_bot_auth_replays_total',
      'Web Bot Auth signatures replayed (a nonce its signer had used), counted failed.',
    ],
    [
      'unregistered',
      'agentnode_web_bot_auth_unregistered_total',
      'Signatures naming a key directory no family registers (never fetched).',
    ],
    [
      'nonceClaimFailures',
      'agentnode_web_bot_auth_nonce_claim_failures_total',
      'Nonces of verified Web Bot Auth signatures the shared store (PostgreSQL) did not claim in time, counted unverifiable.',
    ],
  ] as const;
  for (const [key, name, help] of webBotAuth) sinceStart(name, help, () => sources?.webBotAuth?.()[key]);

  const journal: JournalObserver = {
    written(seconds, groupSize) {
      journalWrite.observe(seconds);
      journalGroup.observe(groupSize);
    },
    failed(groupSize) {
      storeErrors.inc(groupSize);
    },
  };

  return {
    registry,
    journal,
    /** Connects the scrape-time readings once telemetry is up. */
    watch(s: MetricSources): void {
      sources = s;
    },
    /** One finished request (the gateway's observer). */
    observe(r: ObservedRequest, problem?: string): void {
      const operation = operationOf(r.method, r.path);
      requests.inc({ operation, status_class: statusClass(r.status) });
      answers.inc({ status: String(r.status), code: problem ?? '' });
      latency.observe({ operation }, r.durationMs / 1000);
      if (r.status === 429) rateLimited.inc();
    },
    /** The exposition text and its Content-Type. */
    async scrape(): Promise<{ contentType: string; body: string }> {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
