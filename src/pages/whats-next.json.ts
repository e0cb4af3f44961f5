import type { APIRoute } from 'astro';
import { buildWhatsNext } from '../../api/documents/agent-docs.ts';
import { document, siteContent, siteLinks } from '../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildWhatsNext(await siteContent(), siteLinks()), 'json');
