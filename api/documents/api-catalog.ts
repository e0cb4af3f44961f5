import { at, type Links } from './links.ts';

/** RFC 9727's media type: a linkset (RFC 9264) with the API catalog profile. */
export const API_CATALOG_TYPE = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"';
export const API_CATALOG_PATH = '/.well-known/api-catalog';

/** The OpenAPI media type with its version (the OpenAPI Initiative's registration). */
export const OPENAPI_TYPE = 'application/vnd.oai.openapi+json;version=3.1';

interface Target {
  href: string;
  type?: string;
  title?: string;
}
export type LinksetContext = { anchor: string } & Record<string, Target[] | string>;

/**
 * /.well-known/api-catalog (RFC 9727): a linkset (RFC 9264 section 4.2) whose first context, the
 * catalog itself, lists each API as an `item`; each API is then a context of its own with its
 * description (`service-desc`), its documentation (`service-doc`) and, where it has one, its
 * status (`status`). The APIs: the HTTP API (OpenAPI and reference), the MCP endpoint, the A2A
 * endpoint (its agent card), and llms.txt, the map of the whole service for language models.
 */
export function buildApiCatalog(links: Links, paths: { mcp: string; a2a: string; health: string }) {
  const u = (path: string) => at(links.site, path);
  const apis: LinksetContext[] = [
    {
      anchor: u('/api/'),
      'service-desc': [{ href: u('/openapi.json'), type: OPENAPI_TYPE, title: 'OpenAPI 3.1' }],
      'service-doc': [
        { href: u('/docs/api'), type: 'text/html', title: 'API reference' },
        { href: u('/docs/api.md'), type: 'text/markdown', title: 'API reference (Markdown)' },
      ],
      status: [{ href: u(paths.health), type: 'application/json' }],
    },
    {
      anchor: u(paths.mcp),
      'service-desc': [{ href: u('/openapi.json'), type: OPENAPI_TYPE, title: 'POST /mcp in the OpenAPI' }],
      'service-doc': [{ href: u('/agents/kit.json'), type: 'application/json', title: 'Agent kit: MCP tools' }],
    },
    {
      anchor: u(paths.a2a),
      'service-desc': [{ href: u('/.well-known/agent-card.json'), type: 'application/json', title: 'A2A agent card' }],
      'service-doc': [{ href: u('/docs/api'), type: 'text/html', title: 'API reference' }],
    },
    {
      anchor: u('/llms.txt'),
      'service-doc': [{ href: u('/llms.txt'), type: 'text/plain', title: 'llms.txt' }],
    },
  ];
  return {
    linkset: [{ anchor: u(API_CATALOG_PATH), item: apis.map((a) => ({ href: a.anchor })) }, ...apis],
  };
}
