import type { APIRoute } from 'astro';
import { whatsNextMarkdown } from '../../api/documents/markdown.ts';
import { document, siteContent, siteLinks } from '../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(whatsNextMarkdown(await siteContent(), siteLinks()), 'markdown');
