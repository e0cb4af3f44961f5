import type { APIRoute } from 'astro';
import { botWallMarkdown } from '../../api/documents/markdown.ts';
import { PATH } from '../../api/operations/paths.ts';
import { document, siteLinks } from '../lib/content.ts';

// The page is live; its Markdown is prebuilt and points to the live JSON and CSV (api/documents/markdown.ts).
export const prerender = true;
export const GET: APIRoute = () =>
  document(
    botWallMarkdown(siteLinks(), { json: PATH.getBotWall, csv: PATH.getBotWallCsv, traffic: PATH.getBotTraffic }),
    'markdown',
  );
