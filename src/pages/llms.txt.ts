import type { APIRoute } from 'astro';
import { buildLlmsTxt } from '../../api/documents/crawl.ts';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { document, siteContent, siteLinks } from '../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildLlmsTxt(await siteContent(), siteLinks(), DOCUMENTS), 'text');
