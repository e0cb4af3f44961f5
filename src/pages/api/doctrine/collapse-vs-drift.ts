import type { APIRoute } from 'astro';
import { buildDoctrineApi } from '../../../../api/documents/doctrine.ts';
import { doctrineNote, document, siteLinks } from '../../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () =>
  document(buildDoctrineApi(await doctrineNote('model-collapse-vs-constitutional-drift'), siteLinks()), 'json');
