import type { APIRoute } from 'astro';
import { buildPropertySchema } from '../../../api/documents/property.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildPropertySchema(await siteContent(), siteLinks()), 'json');
