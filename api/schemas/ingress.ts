import { z } from 'zod';
import { apiSchemas } from './registry.ts';

/** Body of POST /api/ingress/audio as JSON: flat audio metadata under industry names (DDEX ERN, ID3, plain). */
export const IngressMetadataSchema = z
  .record(z.string().min(1).max(100), z.union([z.string().max(2000), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= 200, 'at most 200 fields')
  .register(apiSchemas, {
    id: 'IngressMetadata',
    examples: [
      {
        DisplayTitleText: "What's Next",
        DisplayArtistName: 'Agent Node',
        ISRC: 'QZAAA2600012',
        Duration: 'PT3M25S',
        chartPosition: 12,
        streams: 120000,
      },
    ],
  });
