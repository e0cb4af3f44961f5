import { getCollection, getEntry } from 'astro:content';
import { CONTENT_FILES, type Content, type ContentKey, type DoctrineNote } from '../../api/content/load.ts';
import { loadConfig } from '../../api/config.ts';
import type { Links } from '../../api/documents/links.ts';
import { API_CATALOG_TYPE } from '../../api/documents/api-catalog.ts';

/** All data content, read through Astro's content collections (validated at build). */
export async function siteContent(): Promise<Content> {
  const keys = Object.keys(CONTENT_FILES) as ContentKey[];
  const entries = await Promise.all(keys.map(async (k) => (await getCollection(k))[0]?.data));
  keys.forEach((k, i) => {
    if (entries[i] === undefined) throw new Error(`content/${CONTENT_FILES[k].file} is missing`);
  });
  return Object.fromEntries(keys.map((k, i) => [k, entries[i]])) as Content;
}

/** One doctrine note with its raw Markdown body. */
export async function doctrineNote(slug: string): Promise<DoctrineNote> {
  const entry = await getEntry('doctrine', slug);
  if (!entry) throw new Error(`content/doctrine/${slug}.md is missing`);
  return { slug, data: entry.data as DoctrineNote['data'], body: entry.body ?? '' };
}

/**
 * {base_url} and {canon_url}: on a page rendered on demand, the running server's (its locals); on a
 * prebuilt one, the build's configuration.
 */
export function siteLinks(locals?: Partial<App.Locals>): Links {
  if (locals?.links) return locals.links;
  const config = loadConfig();
  return { site: config.SITE_URL, canon: config.CANON_URL };
}

/** A prebuilt document answer with an explicit media type (recorded in the static manifest). */
export function document(body: unknown, type: 'json' | 'linkset' | 'markdown' | 'text' | 'xml'): Response {
  const types = {
    json: 'application/json; charset=utf-8',
    linkset: API_CATALOG_TYPE,
    markdown: 'text/markdown; charset=utf-8',
    text: 'text/plain; charset=utf-8',
    xml: 'application/xml; charset=utf-8',
  };
  const text = type === 'json' || type === 'linkset' ? `${JSON.stringify(body, null, 2)}\n` : String(body);
  return new Response(text, { headers: { 'Content-Type': types[type] } });
}
