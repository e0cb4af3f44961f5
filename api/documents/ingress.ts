import type { Content } from '../content/load.ts';
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
    note: i.note,
    doctrine: i.doctrine,
    related: {
      self: at(links.site, '/api/ingress'),
      audio: at(links.site, '/api/ingress/audio'),
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
