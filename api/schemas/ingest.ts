import { z } from 'zod';
import { FORMATS } from './log-formats.ts';
import { apiSchemas } from './registry.ts';

export { FORMATS };

/** Most records in one batch to POST /api/telemetry/ingest (bytes: INGEST_BATCH_BYTES, 4 MiB by default). */
export const INGEST_MAX_LINES = 10_000;

/**
 * Body of POST /api/telemetry/ingest as JSON: log records of one format, each a line of text (combined,
 * CloudFront, NDJSON) or an object (our JSON line, a Cloudflare Logpush record, a drain record).
 * Records that cannot be read are skipped and counted by reason; they never fail the batch.
 */
export const CdnLogBatchSchema = z
  .object({
    /** The records' format; recognised from the content when left out. */
    format: z.enum(FORMATS).optional(),
    /** Up to 10,000 records. */
    lines: z
      .array(z.union([z.string(), z.record(z.string(), z.unknown())]))
      .min(1)
      .max(INGEST_MAX_LINES),
  })
  .register(apiSchemas, {
    id: 'CdnLogBatch',
    examples: [
      {
        lines: [
          {
            method: 'GET',
            path: '/api/convert',
            host: 'cdn.example.org',
            userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2)',
            status: 200,
          },
        ],
      },
      {
        format: 'combined',
        lines: [
          '66.249.66.1 - - [21/Nov/2026:10:00:00 +0000] "GET /llms.txt HTTP/1.1" 200 5123 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"',
        ],
      },
    ],
  });
export type CdnLogBatch = z.output<typeof CdnLogBatchSchema>;

/** The answer: records read as requests, how many the ledger counted (bots and bait hits), how many were dated outside its range, and skips by reason. */
export const IngestResultSchema = z
  .object({
    /** Records read as requests. */
    accepted: z.number().int(),
    /** Requests the ledger counted (bots, bait hits, and people an AI product sent: referrals). */
    counted: z.number().int(),
    /** Requests dated outside the ledger's range at the server's clock (ledgerRange); they change nothing. */
    outOfRange: z
      .number()
      .int()
      .describe(
        "Requests dated outside what the ledger keeps at the server's clock: before UTC midnight 7 days before today (its oldest daily bucket) or more than 5 minutes ahead. They change nothing.",
      ),
    /** Records skipped, by reason. */
    skipped: z.record(z.string(), z.number().int()),
  })
  .register(apiSchemas, { id: 'IngestResult' });
export type IngestResult = z.output<typeof IngestResultSchema>;
