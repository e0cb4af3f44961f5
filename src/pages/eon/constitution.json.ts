import type { APIRoute } from 'astro';
import { document, siteContent } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document((await siteContent()).constitution, 'json');
