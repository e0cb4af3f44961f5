import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';

const Port = z.coerce.number().int().min(0).max(65535);
const Origin = z
  .url({ protocol: /^https?$/ })
  .transform((u) => u.replace(/\/+$/, ''));

/** Environment variables, with defaults, validated once at start-up (DESIGN section 10). */
export const ConfigSchema = z.object({
  PORT: Port.default(4321),
  HOST: z.string().default('0.0.0.0'),
  /** {base_url}: absolute URLs inside documents start with it. */
  SITE_URL: Origin.default('http://localhost:4321'),
  /** {canon_url}: the canonical site of the track and doctrine pages. */
  CANON_URL: Origin.default('https://canon.agentnode.example'),
  /** Folder of the embedded store, or `:memory:` for a store that keeps nothing. */
  DATA_DIR: z.string().default('./data').transform((p) => (p === ':memory:' ? p : resolve(p))),
  /** postgres://... selects the PostgreSQL store (many processes, one database); empty means embedded. */
  DATABASE_URL: z
    .string()
    .optional()
    .transform((v) => (v ? v : undefined))
    .refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL'),
  /** The embedded store's ceiling, in bytes it holds in memory (past it writes answer 503 STORE_FULL; near it /readyz and the log warn); default half the V8 heap limit. */
  EMBEDDED_MAX_BYTES: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().positive().optional()),
  /** Write requests per minute per client address; 0 turns limiting off. */
  WRITE_RATE_LIMIT: z.coerce.number().int().min(0).default(60),
  /** Largest JSON request body, in bytes. */
  BODY_LIMIT_BYTES: z.coerce.number().int().positive().default(64 * 1024),
  /** Largest audio upload to POST /api/ingress/audio, in bytes. */
  INGRESS_UPLOAD_LIMIT_BYTES: z.coerce.number().int().positive().default(50 * 1024 * 1024),
  /** Uploads (audio bodies streamed to disk) read at once, over all clients; more answer 503. */
  UPLOAD_CONCURRENCY: z.coerce.number().int().positive().default(8),
  /** Uploads read at once from one client address (an IPv6 /64); more answer 429. */
  UPLOAD_CONCURRENCY_PER_CLIENT: z.coerce.number().int().positive().default(2),
  /** Bytes a second read of all uploads together; past it, the server stops reading and the clients wait (TCP flow control). */
  UPLOAD_BYTES_PER_SECOND: z.coerce.number().int().positive().default(16 * 1024 * 1024),
  /** A request body (upload or JSON) that sends no byte for this long is dropped with 408. */
  BODY_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
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
  INGEST_BATCH_BYTES: z.coerce.number().int().positive().default(4 * 1024 * 1024),
  /** Bearer token for GET /metrics on the main port; without it (and without METRICS_PORT) there are no metrics. At least 32 characters. */
  METRICS_TOKEN: z
    .string()
    .optional()
    .transform((v) => (v ? v : undefined))
    .refine((v) => v === undefined || v.length >= 32, 'must be at least 32 characters'),
  /** A separate port that serves only GET /metrics, without a token (bind it where only the scraper reaches); empty means none. */
  METRICS_PORT: z.preprocess((v) => (v === '' ? undefined : v), Port.optional()),
  /**
   * An Ed25519 private key (PKCS#8 PEM) that signs the receipt log's tree heads. Give every process
   * the same file; without it each data folder makes its own key at first start.
   */
  LOG_SIGNING_KEY_FILE: z
    .string()
    .optional()
    .transform((v) => (v ? resolve(v) : undefined)),
  /** How often the bot ledger is saved (and, with several processes on PostgreSQL, how soon each sees the others' counts). */
  TELEMETRY_FLUSH_MS: z.coerce.number().int().positive().default(5000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Where the build lives (dist/ by default). */
  DIST_DIR: z.string().default('./dist').transform((p) => resolve(p)),
  /** Where content lives (content/ by default). */
  CONTENT_DIR: z.string().default('./content').transform((p) => resolve(p)),
});
export type Config = z.output<typeof ConfigSchema>;

/** Parses the environment; throws a readable error naming each bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}
