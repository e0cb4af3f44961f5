import type { APIRoute } from 'astro';
import { buildIngressDescriptor } from '../../../api/documents/ingress.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildIngressDescriptor(await siteContent(), siteLinks()), 'json');
