export * from './types.ts';
export { parseCombined, clfTime, unescapeQuoted } from './combined.ts';
export { parseCloudflare } from './cloudflare.ts';
export { cloudFrontReader, CLOUDFRONT_FIELDS } from './cloudfront.ts';
export { parseDrain } from './drain.ts';
export { parseJsonLine } from './json-line.ts';
export { detectFormat, formatOf } from './detect.ts';
export { parseBatch, readerOf, MAX_RECORD_CHARS, type ParsedBatch } from './parse.ts';
