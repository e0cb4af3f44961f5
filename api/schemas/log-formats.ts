/**
 * The log formats POST /api/telemetry/ingest reads (api/telemetry/log-formats has a reader for
 * each). A module of its own, without zod: `npm run ingest-logs` needs the list, not the schemas,
 * and loading zod and the registry was 0.2 s of its start.
 */
export const FORMATS = ['json', 'combined', 'cloudflare', 'cloudfront', 'drain'] as const;
