import type { APIRoute } from 'astro';
import { buildPrimitives } from '../../../../api/omip/primitives.ts';
import { document, siteContent } from '../../../lib/content.ts';

export const prerender = true;
export const GET: APIRoute = async () => {
  const primitives = buildPrimitives((await siteContent()).constitution);
  return document({ count: primitives.length, primitives }, 'json');
};
