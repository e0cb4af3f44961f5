import type { APIRoute } from 'astro';
import { buildConvertPayload } from '../../../api/documents/convert.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildConvertPayload(await siteContent(), siteLinks()), 'json');
