import type { APIRoute } from 'astro';
import { buildAgentCard } from '../../../api/documents/agent-card.ts';
import { document, siteContent, siteLinks } from '../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => document(buildAgentCard(await siteContent(), siteLinks()), 'json');
