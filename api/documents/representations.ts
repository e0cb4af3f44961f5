import { API_CATALOG_PATH, OPENAPI_TYPE } from './api-catalog.ts';
import { PATH } from '../operations/paths.ts';
import { MEDIA_TYPES, type CatalogEntry } from './catalog.ts';
import { markdownTwinOf } from './markdown.ts';

/**
 * The Link header (RFC 8288) of every document: `alternate` to its other representations (an HTML
 * page's Markdown twin and its JSON, and back), `api-catalog` (RFC 9727) to /.well-known/api-catalog,
 * `service-desc` and `service-doc` (RFC 8631) where a document describes or documents the API.
 * Targets are paths, resolved against the request's own URL. Pure: the gateway bakes each value
 * into its document's headers once, at start.
 */

/** Other representations of a page than its HTML and Markdown: the same content for machines. */
const ALSO: Record<string, { path: string; type: string }[]> = {
  '/whats-next': [{ path: PATH.getWhatsNext, type: 'application/json' }],
  '/doctrine/model-collapse-vs-constitutional-drift': [
    { path: '/api/doctrine/collapse-vs-drift', type: 'application/json' },
  ],
  [PATH.botWallPage]: [
    { path: PATH.getBotWall, type: 'application/json' },
    { path: PATH.getBotWallCsv, type: 'text/csv' },
  ],
};

const quote = (s: string) => `"${s.replace(/["\\]/g, '\\$&')}"`;
const link = (href: string, rel: string, type?: string) =>
  `<${href}>; rel="${rel}"${type === undefined ? '' : `; type=${quote(type)}`}`;

// The type without its profile parameter: a quoted string inside a quoted parameter is easy to misread.
const CATALOG_LINK = link(API_CATALOG_PATH, 'api-catalog', 'application/linkset+json');
const SERVICE_DESC = link('/openapi.json', 'service-desc', OPENAPI_TYPE);
const SERVICE_DOC = [
  link('/docs/api', 'service-doc', 'text/html'),
  link('/docs/api.md', 'service-doc', 'text/markdown'),
];

/** Relations beyond `alternate`, by path. */
const RELATIONS: Record<string, string[]> = {
  '/': [CATALOG_LINK, SERVICE_DESC, ...SERVICE_DOC],
  '/docs/api': [SERVICE_DESC],
  '/openapi.json': SERVICE_DOC,
  [API_CATALOG_PATH]: [SERVICE_DESC, ...SERVICE_DOC],
};

/**
 * The representations of every page of `catalog`: the HTML page, its Markdown twin when the
 * catalog lists one, and the JSON (or CSV) of ALSO. Each member of a group names every other.
 */
export function representationGroups(catalog: CatalogEntry[]): { path: string; type: string }[][] {
  const listed = new Set(catalog.map((e) => e.path));
  return catalog
    .filter((e) => e.type === 'html')
    .map((page) => [
      { path: page.path, type: MEDIA_TYPES.html },
      ...(listed.has(markdownTwinOf(page.path))
        ? [{ path: markdownTwinOf(page.path), type: MEDIA_TYPES.markdown }]
        : []),
      ...(ALSO[page.path] ?? []),
    ]);
}

/** The Link header value of every path of `catalog` (and of the other members of its groups). */
export function linkHeaders(catalog: CatalogEntry[]): Map<string, string> {
  const out = new Map<string, string[]>();
  const add = (path: string, ...links: string[]) => out.set(path, [...(out.get(path) ?? []), ...links]);
  for (const group of representationGroups(catalog))
    for (const member of group)
      add(member.path, ...group.filter((o) => o !== member).map((o) => link(o.path, 'alternate', o.type)));
  // A page's Markdown twin carries the page's relations: it is the same page.
  for (const [path, rels] of Object.entries(RELATIONS)) {
    add(path, ...rels);
    if (catalog.some((e) => e.path === markdownTwinOf(path))) add(markdownTwinOf(path), ...rels);
  }
  // Every document leads to the catalog (RFC 9727 section 3: any resource of the publisher may).
  for (const e of catalog) if (!(out.get(e.path) ?? []).includes(CATALOG_LINK)) add(e.path, CATALOG_LINK);
  for (const group of Object.values(ALSO))
    for (const m of group) if (!(out.get(m.path) ?? []).includes(CATALOG_LINK)) add(m.path, CATALOG_LINK);
  return new Map([...out].map(([path, links]) => [path, links.join(', ')]));
}
