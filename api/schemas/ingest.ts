import { z } from 'zod';
import { apiSchemas } from './registry.ts';

/** One request a CDN served, as its log line says. */
export const CdnLogLineSchema = z.object({
  method: z.string().regex(/^[A-Z]{3,10}$/),
  /** Path without the query string. */
  path: z.string().startsWith('/').max(2048),
  host: z.string().max(255).default(''),
  userAgent: z.string().max(1024).default(''),
  status: z.number().int().min(100).max(599),
  /** When the CDN served it (ISO 8601); defaults to the time of ingest. */
  time: z.iso.datetime().optional(),
});

/** Body of POST /api/telemetry/ingest: a batch of CDN log lines. */
export const CdnLogBatchSchema = z
  .object({ lines: z.array(CdnLogLineSchema).min(1).max(1000) })
  .register(apiSchemas, { id: 'CdnLogBatch', examples: [{ lines: [{ method: 'GET', path: '/api/convert', host: 'cdn.example.org', userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2)', status: 200 }] }] });
export type CdnLogBatch = z.output<typeof CdnLogBatchSchema>;
