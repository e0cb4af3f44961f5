import type { APIRoute } from 'astro';
import { buildSitemap } from '../../api/documents/crawl.ts';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { document, siteContent, siteLinks } from '../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildSitemap(await siteContent(), siteLinks(), DOCUMENTS), 'xml');
