import type { APIRoute } from 'astro';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { buildOpenApi } from '../../api/openapi/openapi.ts';
import { document, siteContent, siteLinks } from '../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () =>
  document(buildOpenApi(await siteContent(), siteLinks().site, DOCUMENTS), 'json');
