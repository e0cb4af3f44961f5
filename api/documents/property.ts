import type { Content } from '../content/load.ts';
import { at, type Links } from './links.ts';
import { PATH } from '../operations/paths.ts';

const str = { type: 'string', minLength: 1 } as const;

/** /schemas/property-descriptor.v1.json: JSON Schema 2020-12 of spec 2.10. */
export function buildPropertySchema(c: Content, links: Links) {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: at(links.site, '/schemas/property-descriptor.v1.json'),
    title: `${c.site.name} property descriptor, protocol version 1`,
    type: 'object',
    required: [
      'protocol',
      'protocolVersion',
      'id',
      'name',
      'canonicalUrl',
      'repository',
      'kind',
      'purpose',
      'owner',
      'partOf',
      'version',
      'aliases',
      'notSameAs',
      'relationships',
      'surfaces',
      'stateSources',
    ],
    properties: {
      protocol: { const: `${c.site.service}-property-protocol` },
      protocolVersion: { const: 1 },
      id: { type: 'string', pattern: `^${c.site.prefix}-PROPERTY-[A-Z0-9-]+$` },
      name: str,
      canonicalUrl: { type: 'string', format: 'uri', pattern: '^https://' },
      repository: str,
      kind: str,
      purpose: str,
      owner: { const: c.property.owner },
      partOf: { const: c.property.partOf },
      version: str,
      aliases: { type: 'array', items: { type: 'string' } },
      notSameAs: { type: 'array', items: { type: 'string', format: 'uri' } },
      relationships: {
        type: 'array',
        items: {
          type: 'object',
          required: ['type', 'name'],
          properties: { type: str, name: str, url: { type: 'string', format: 'uri' } },
        },
      },
      surfaces: {
        type: 'array',
        items: {
          type: 'object',
          required: ['url', 'role', 'index'],
          properties: { url: { type: 'string', format: 'uri' }, role: { type: 'string' }, index: { type: 'boolean' } },
        },
      },
      stateSources: {
        type: 'array',
        items: {
          type: 'object',
          required: ['url', 'fields'],
          properties: { url: { type: 'string', format: 'uri' }, fields: { type: 'array', minItems: 1, items: str } },
        },
      },
    },
  };
}

/**
 * The https canonical URL of the property: content's canonicalUrl, else CANON_URL when it is
 * https. An http CANON_URL is never made https by swapping its scheme (that address need not
 * answer): with neither, the build fails naming the content field to set.
 */
export function canonicalUrlOf(c: Content, links: Links): string {
  if (c.property.canonicalUrl) return c.property.canonicalUrl;
  if (links.canon.startsWith('https://')) return `${links.canon}/`;
  throw new Error(
    `property.yaml: canonicalUrl: the property descriptor needs an https canonical URL, and CANON_URL (${links.canon}) is not https. ` +
      'Set canonicalUrl in content/property.yaml to the https URL of this property, or build with an https CANON_URL.',
  );
}

/** /.well-known/property.json: this service described by its own protocol. */
export function buildPropertyDescriptor(c: Content, links: Links) {
  const p = c.property;
  const canonicalUrl = canonicalUrlOf(c, links);
  return {
    protocol: `${c.site.service}-property-protocol`,
    protocolVersion: 1,
    id: p.id,
    name: p.name,
    canonicalUrl,
    repository: p.repository,
    kind: p.kind,
    purpose: p.purpose,
    owner: p.owner,
    partOf: p.partOf,
    version: p.version,
    aliases: p.aliases,
    notSameAs: p.notSameAs,
    relationships: p.relationships.map((r) => ({
      ...r,
      url: r.url ?? (r.type === 'canonical-site' ? canonicalUrl : undefined),
    })),
    surfaces: [
      { url: at(links.site, '/'), role: 'home', index: true },
      { url: at(links.site, '/api/convert'), role: 'convert', index: true },
      { url: at(links.site, '/agents/kit.json'), role: 'agent-kit', index: true },
      { url: at(links.site, '/eon/constitution.json'), role: 'constitution', index: true },
      { url: at(links.canon, '/whats-next'), role: 'whats-next', index: true },
    ],
    stateSources: [
      { url: at(links.site, PATH.listCitizens), fields: ['count', 'citizens'] },
      { url: at(links.site, PATH.getHealth), fields: ['status', 'drift'] },
    ],
  };
}
