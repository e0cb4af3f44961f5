import type { APIRoute } from 'astro';
import { buildPropertyDescriptor } from '../../../api/documents/property.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildPropertyDescriptor(await siteContent(), siteLinks()), 'json');
