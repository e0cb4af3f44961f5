import type { APIRoute } from 'astro';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { homeMarkdown } from '../../api/documents/markdown.ts';
import { document, siteContent, siteLinks } from '../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () =>
  document(homeMarkdown(await siteContent(), siteLinks(), DOCUMENTS), 'markdown');
