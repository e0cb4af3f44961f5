import type { APIRoute, GetStaticPaths } from 'astro';
import { DOCTRINE_SLUGS } from '../../../api/content/load.ts';
import { doctrineMarkdown } from '../../../api/documents/doctrine.ts';
import { doctrineNote, document } from '../../lib/content.ts';

export const prerender = true;
export const getStaticPaths = (() => DOCTRINE_SLUGS.map((slug) => ({ params: { slug } }))) satisfies GetStaticPaths;
export const GET: APIRoute = async ({ params }) =>
  document(doctrineMarkdown(await doctrineNote(params.slug!)), 'markdown');
