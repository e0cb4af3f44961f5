import { isIP } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { StartupError } from './startup-error.ts';
import { checkTrustList } from './http/client.ts';
import { RETENTION_BOUNDS } from './telemetry/ledger/ledger.ts';

const Port = z.coerce.number().int().min(0).max(65535);
const Origin = z
  .url({ protocol: /^https?$/ })
  // It is written into JSON, HTML, shell and Python texts as it is: nothing there may need escaping.
  .refine((u) => !/[\s"'`\\<>]/.test(u), 'must not contain spaces, quotes, backslashes or angle brackets')
  .transform((u) => u.replace(/\/+$/, ''));
/** `ip`, `ip:port` or `[ipv6]:port`, as node's Resolver#setServers takes them; null when it is none of these. */
function dnsServer(entry: string): string | null {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  const [host, port] = v6
    ? [v6[1]!, v6[2]]
    : isIP(entry) === 6
      ? [entry, undefined]
      : (entry.split(':') as [string, string?]);
  if (!isIP(host) || (port !== undefined && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)))
    return null;
  return entry;
}
const DnsServers = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .refine(
    (list) => list.every((s) => dnsServer(s) !== null),
    'must be a comma-separated list of ip, ip:port or [ipv6]:port',
  );

/**
 * An unset, empty or blank variable: the default applies, for every variable alike (loadConfig).
 * Env files write `DATA_DIR=` for none, and z.coerce.number() would read "" as 0.
 */
const unset = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

/**
 * Node's timers hold at most 2^31-1 ms (a longer one fires after 1 ms), and PostgreSQL's *_timeout
 * settings are int4 milliseconds: the most any time setting may be.
 */
export const MAX_TIMER_MS = 2_147_483_647;
/** Milliseconds, from `min` to `max`. */
const Millis = (min: number, max = MAX_TIMER_MS) =>
  z.coerce.number().int().min(min).max(max, `must be at most ${max} (ms)`);

/**
 * Ingest worker threads by default: one fewer than the cores, at least one and at most two. The
 * thread that counts the groups is busy too; on two cores a second worker only took turns with it
 * (a 500,000-line log: 2.14-2.20 times GoAccess's speed with one, 1.97-2.01 with two).
 */
export const defaultIngestWorkers = (cores: number): number => Math.max(1, Math.min(2, cores - 1));

/** Environment variables, with defaults, validated once at start-up (DESIGN section 10). */
export const ConfigSchema = z
  .object({
    PORT: Port.default(4321),
    HOST: z.string().default('0.0.0.0'),
    /** {base_url}: the service's own address; every absolute URL in documents starts with it (default http://localhost:PORT). */
    SITE_URL: Origin.optional(),
    /**
     * Other addresses the service answers on (comma-separated origins, e.g. https://www.example.org):
     * with SITE_URL, the authorities a Web Bot Auth signature may be made for.
     */
    SITE_ALIASES: z.preprocess(
      (v) =>
        typeof v === 'string'
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : v,
      z.array(Origin).default([]),
    ),
    /** {canon_url}: the canonical site of the track and doctrine pages. */
    CANON_URL: Origin.default('https://canon.agentnode.example'),
    /** Folder of the embedded store, or `:memory:` for a store that keeps nothing. */
    DATA_DIR: z
      .string()
      .default('./data')
      .transform((p) => (p === ':memory:' ? p : resolve(p))),
    /** postgres://... selects the PostgreSQL store (many processes, one database); empty means embedded. */
    DATABASE_URL: z
      .string()
      .optional()
      .transform((v) => (v ? v : undefined))
      .refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL'),
    /** The embedded store's ceiling, in bytes it holds in memory (past it writes answer 503 STORE_FULL; near it /readyz and the log warn); default half the V8 heap limit. */
    EMBEDDED_MAX_BYTES: z.coerce.number().int().positive().optional(),
    /** Connections each process keeps to PostgreSQL at most. */
    PG_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(10),
    /** A connection to PostgreSQL (or a free one from the pool) not had within this long answers 503. */
    PG_CONNECT_TIMEOUT_MS: Millis(100).default(1500),
    /**
     * A statement is cancelled by PostgreSQL after this long (statement_timeout); with no answer at all 500 ms later, the connection is dropped: 503 either way.
     * At most half MAX_TIMER_MS: twice it is each transaction's idle_in_transaction_session_timeout.
     */
    PG_QUERY_TIMEOUT_MS: Millis(100, Math.floor(MAX_TIMER_MS / 2)).default(2000),
    /** A pooled connection unused for this long is closed. */
    PG_IDLE_TIMEOUT_MS: Millis(100).default(10_000),
    /** Write requests per minute per client address; 0 turns limiting off. */
    WRITE_RATE_LIMIT: z.coerce.number().int().min(0).default(60),
    /** Largest JSON request body, in bytes. */
    BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(64 * 1024),
    /** Largest audio upload to POST /api/ingress/audio, in bytes. */
    INGRESS_UPLOAD_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(50 * 1024 * 1024),
    /** Threads uploaded audio files are parsed on (so at most this many cores parse at once). */
    AUDIO_PARSE_WORKERS: z.coerce.number().int().positive().default(1),
    /** CPU one audio file's parse may spend, in ms; past it the parse is ended and the upload answered 422. */
    AUDIO_PARSE_CPU_MS: Millis(1).default(500),
    /** Container elements (EBML elements, MP4 boxes, Ogg pages, ID3 frames...) an audio file may hold; more answer 422. */
    AUDIO_MAX_ELEMENTS: z.coerce.number().int().positive().default(20_000),
    /** Uploads (audio bodies streamed to disk) read at once, over all clients; more answer 503. */
    UPLOAD_CONCURRENCY: z.coerce.number().int().positive().default(8),
    /** Uploads read at once from one client address (an IPv6 /64); more answer 429. */
    UPLOAD_CONCURRENCY_PER_CLIENT: z.coerce.number().int().positive().default(2),
    /** Bytes a second read of all uploads together; past it, the server stops reading and the clients wait (TCP flow control). */
    UPLOAD_BYTES_PER_SECOND: z.coerce
      .number()
      .int()
      .positive()
      .default(16 * 1024 * 1024),
    /** A request body (upload or JSON) that sends no byte for this long is dropped with 408. */
    BODY_IDLE_TIMEOUT_MS: Millis(1).default(30_000),
    /** A connection that neither sends nor takes a byte for this long is closed (a stalled reader holds nothing longer). */
    SEND_TIMEOUT_MS: Millis(1).default(30_000),
    /** Connections open at once from one client (an IPv4 address, an IPv6 /64; trusted proxies are not counted); a request on one more is answered 429 and closed. */
    MAX_CONNECTIONS_PER_CLIENT: z.coerce.number().int().positive().default(64),
    /** Folder of the temporary files uploads are streamed to (removed after each answer). */
    UPLOAD_TMP_DIR: z
      .string()
      .optional()
      .transform((p) => resolve(p ? p : tmpdir())),
    /** Bearer token for POST /api/telemetry/ingest (CDN log lines); the route is off when empty. At least 32 characters. */
    INGEST_TOKEN: z
      .string()
      .optional()
      .transform((v) => (v ? v : undefined))
      .refine((v) => v === undefined || v.length >= 32, 'must be at least 32 characters'),
    /** Largest body of one POST /api/telemetry/ingest batch, in bytes (at most 10,000 records either way). */
    INGEST_BATCH_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** Worker threads that read POST /api/telemetry/ingest batches beside the thread that counts them (0: that thread reads them; empty: the default). */
    INGEST_WORKERS: z.coerce.number().int().min(0).max(16).default(defaultIngestWorkers(availableParallelism())),
    /** Bearer token for GET /metrics on the main port; without it (and without METRICS_PORT) there are no metrics. At least 32 characters. */
    METRICS_TOKEN: z
      .string()
      .optional()
      .transform((v) => (v ? v : undefined))
      .refine((v) => v === undefined || v.length >= 32, 'must be at least 32 characters'),
    /** A separate port that serves only GET /metrics, without a token (bind it where only the scraper reaches); empty means none. */
    METRICS_PORT: Port.optional(),
    /** 1: a missing data-folder signing key beside signed receipts is replaced (the rotation appended to the log) instead of refusing the start. */
    LOG_SIGNING_KEY_ROTATE: z
      .enum(['0', '1'])
      .optional()
      .transform((v) => v === '1'),
    /**
     * An Ed25519 private key (PKCS#8 PEM) that signs the receipt log's tree heads. Give every process
     * the same file; without it each data folder makes its own key at first start.
     */
    LOG_SIGNING_KEY_FILE: z
      .string()
      .optional()
      .transform((v) => (v ? resolve(v) : undefined)),
    /** How often the bot ledger is saved (and, with several processes on PostgreSQL, how soon each sees the others' counts). */
    TELEMETRY_FLUSH_MS: Millis(1).default(5000),
    /** A folder of other hosts' robots.txt files, one `<host>.txt` each (at most 64, 512 KiB each), that ingested log lines of those hosts are judged against; empty means none. */
    ROBOTS_TXT_DIR: z
      .string()
      .optional()
      .transform((v) => (v ? resolve(v) : undefined)),
    /** Hourly buckets the bot ledger keeps per family and per AI operator (24-336): the reach of ?range=1h and 24h. */
    LEDGER_HOURS: z.coerce
      .number()
      .int()
      .min(RETENTION_BOUNDS.hours.min)
      .max(RETENTION_BOUNDS.hours.max)
      .default(RETENTION_BOUNDS.hours.default),
    /** Daily buckets the bot ledger keeps per family and per AI operator (7-400): the reach of ?range=7d and 30d. */
    LEDGER_DAYS: z.coerce
      .number()
      .int()
      .min(RETENTION_BOUNDS.days.min)
      .max(RETENTION_BOUNDS.days.max)
      .default(RETENTION_BOUNDS.days.default),
    /** Where bot alerts are POSTed as JSON (a new family, a spike of failed verifications, a crawler on a disallowed path); empty: logged at warn only. */
    ALERT_WEBHOOK_URL: z.url({ protocol: /^https?$/ }).optional(),
    /** Each alert kind is raised once per family within this window. */
    ALERT_WINDOW_MS: Millis(60_000, 7 * 86_400_000).default(3_600_000),
    /** Failed verifications of one family within ALERT_WINDOW_MS that raise a spoofing alert. */
    ALERT_SPOOF_THRESHOLD: z.coerce.number().int().min(1).max(1_000_000).default(20),
    /** Alerts waiting for the webhook at most (one is sent at a time); past it, new ones are only logged. */
    ALERT_QUEUE_MAX: z.coerce.number().int().min(1).max(10_000).default(100),
    /** One webhook POST's time to answer; then it is dropped (never retried). */
    ALERT_TIMEOUT_MS: Millis(100, 60_000).default(5000),
    /** Lets Web Bot Auth key-directory fetches reach loopback addresses (over http too): for tests that serve directories locally; never in production. */
    WEB_BOT_AUTH_ALLOW_LOOPBACK: z.stringbool().default(false),
    /**
     * Proxies whose forwarded client address is believed (comma-separated addresses or CIDRs, or
     * `loopback`, `linklocal`, `uniquelocal`); empty trusts none, and every client is its socket's peer.
     */
    TRUST_PROXY: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean),
      )
      .check((ctx) => {
        try {
          checkTrustList(ctx.value);
        } catch (error) {
          ctx.issues.push({
            code: 'custom',
            input: ctx.value,
            message: `not an address or CIDR list: ${(error as Error).message}`,
          });
        }
      }),
    /** The header the trusted proxies write the client into: `x-forwarded-for` (nginx's `$proxy_add_x_forwarded_for`) or `forwarded` (RFC 7239). */
    PROXY_HEADER: z.enum(['x-forwarded-for', 'forwarded']).default('x-forwarded-for'),
    /** Resolvers that reverse-DNS verification of crawler claims asks (comma-separated ip, ip:port, [ipv6]:port); unset: the system's. */
    DNS_SERVERS: DnsServers.optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Where the build lives (dist/ by default). */
    DIST_DIR: z
      .string()
      .default('./dist')
      .transform((p) => resolve(p)),
    /** Where content lives (content/ by default). */
    CONTENT_DIR: z
      .string()
      .default('./content')
      .transform((p) => resolve(p)),
  })
  .transform((c) => ({ ...c, SITE_URL: c.SITE_URL ?? `http://localhost:${c.PORT}` }));
export type Config = z.output<typeof ConfigSchema>;

/**
 * The server's configuration: as loadConfig, and one store said once. DATA_DIR and DATABASE_URL
 * both set is refused, naming both, rather than one of them silently ignored (writes would go to
 * the store the operator did not mean). `npm run move-to-postgres` reads both, by design.
 */
export function loadServerConfig(env: Record<string, string | undefined> = process.env): Config {
  const config = loadConfig(env);
  if (config.DATABASE_URL && unset(env.DATA_DIR) !== undefined)
    throw new StartupError(
      `DATA_DIR (${env.DATA_DIR}) and DATABASE_URL are both set: the service keeps one store. Unset DATA_DIR to use PostgreSQL, or DATABASE_URL to use the embedded store in DATA_DIR (to move the embedded store's data into PostgreSQL: npm run move-to-postgres).`,
    );
  return config;
}

/** The environment with every empty or blank variable left out: unset, so its default applies. */
const withoutBlanks = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).filter(([, value]) => unset(value) !== undefined));

/** Parses the environment; throws a readable error naming each bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return parseEnv(ConfigSchema, env);
}

/** What `npm run migrate` reads: DATABASE_URL and the PG_* bounds, as the server reads them. */
export function loadPostgresConfig(env: Record<string, string | undefined> = process.env) {
  const schema = ConfigSchema.in.pick({
    DATABASE_URL: true,
    PG_POOL_SIZE: true,
    PG_CONNECT_TIMEOUT_MS: true,
    PG_QUERY_TIMEOUT_MS: true,
    PG_IDLE_TIMEOUT_MS: true,
  });
  return parseEnv(schema, env);
}

function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(withoutBlanks(env));
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new StartupError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}
