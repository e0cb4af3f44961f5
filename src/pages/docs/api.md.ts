import type { APIRoute } from 'astro';
import { DOCUMENTS } from '../../../api/documents/catalog.ts';
import { apiReferenceMarkdown } from '../../../api/documents/markdown.ts';
import { buildOpenApi } from '../../../api/openapi/openapi.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

// The same OpenAPI document /openapi.json serves and /docs/api is drawn from.
export const prerender = true;
export const GET: APIRoute = async () => {
  const links = siteLinks();
  return document(apiReferenceMarkdown(buildOpenApi(await siteContent(), links.site, DOCUMENTS), links), 'markdown');
};
