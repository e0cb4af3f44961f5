import type { APIRoute } from 'astro';
import { buildAiTxt } from '../../../api/documents/crawl.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildAiTxt(await siteContent(), siteLinks()), 'text');
