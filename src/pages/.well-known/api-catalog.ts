import type { APIRoute } from 'astro';
import { buildApiCatalog } from '../../../api/documents/api-catalog.ts';
import { PATH } from '../../../api/operations/paths.ts';
import { document, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = () =>
  document(buildApiCatalog(siteLinks(), { mcp: PATH.mcp, a2a: PATH.a2a, health: '/readyz' }), 'linkset');
