import type { Content } from '../content/load.ts';
import { COUNT_ALIASES, DRM_ALIASES, DURATION_ALIASES, RANKING_ALIASES, TEXT_ALIASES } from '../ingress/aliases.ts';
import { MAX_DURATION_SECONDS } from '../ingress/duration.ts';
import { INGRESS_MEDIA_TYPES } from '../operations/ingress-upload.ts';
import { at, type Links } from './links.ts';

/** GET /api/ingress: the audio ingress descriptor (spec 2.8). */
export function buildIngressDescriptor(c: Content, links: Links) {
  const i = c.ingress;
  return {
    protocol: `${c.site.service}-${i.protocolName}`,
    status: i.status,
    pipeline: i.pipeline,
    primary: i.primary,
    rewardWrite: i.rewardWrite,
    endpoints: ['GET /api/ingress', 'POST /api/ingress/audio'],
    rejects: i.rejects,
    accepts: {
      media_types: INGRESS_MEDIA_TYPES,
      fields: {
        ...TEXT_ALIASES,
        duration: Object.keys(DURATION_ALIASES),
        legacy_counts: COUNT_ALIASES,
        rankings_dropped: RANKING_ALIASES,
        drm_flags: DRM_ALIASES,
      },
      durations: `seconds, milliseconds for TLEN and durationMs, mm:ss, hh:mm:ss, ISO 8601 (PT3M25S); more than 0 and at most ${MAX_DURATION_SECONDS} s`,
      upload:
        'audio/* body or multipart/form-data field "file"; tags and duration are read with music-metadata; encrypted MP4 (drms, enca, encv) is DRM_REJECT, and metadata sent beside the file cannot clear it; a body that starts with no audio signature is 415 NOT_AUDIO',
    },
    note: i.note,
    doctrine: i.doctrine,
    related: {
      // POST /api/ingress/audio is named with its method in `endpoints`; related links answer GET.
      self: at(links.site, '/api/ingress'),
      convert: at(links.site, '/api/convert'),
      constitution: at(links.site, '/eon/constitution.json'),
    },
    schemaOrg: {
      '@context': 'https://schema.org',
      '@type': 'WebAPI',
      name: `${c.site.name} audio ingress`,
      url: at(links.site, '/api/ingress'),
      documentation: at(links.site, '/llms.txt'),
      provider: { '@type': 'Organization', name: c.site.name, url: at(links.site, '/') },
    },
  };
}
