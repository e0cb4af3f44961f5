import type { Content } from '../content/load.ts';
import type { CatalogEntry } from './catalog.ts';
import { at, type Links } from './links.ts';
import { buildTools } from './tools.ts';
import { isUriTemplate } from './uri-template.ts';
import { robotsLines, usageRulesOf } from '../telemetry/robots/preferences.ts';

/**
 * /robots.txt: everything allowed but the bait paths, with the operator's AI usage preferences as
 * Content-Usage rules in the group (draft-ietf-aipref-attach-05, api/telemetry/robots/preferences.ts).
 */
export function buildRobots(c: Content, links: Links): string {
  const p = c.crawlPolicy;
  return [
    '# Every GET document is public. Crawling never requires an oath.',
    '# Content-Usage: AI usage preferences (IETF aipref drafts attach-05 and vocab-08), longest path prefix first.',
    'User-agent: *',
    ...p.allow.map((a) => `Allow: ${a}`),
    ...p.disallow.map((d) => `Disallow: ${d}`),
    ...robotsLines(usageRulesOf(p)),
    '',
    `Sitemap: ${at(links.site, '/sitemap.xml')}`,
    '',
  ].join('\n');
}

/** /.well-known/ai.txt and /ai.txt: the crawl-policy seed. */
export function buildAiTxt(c: Content, links: Links): string {
  const p = c.crawlPolicy;
  return [
    `# ai.txt for ${c.site.name}`,
    `# ${p.hint}`,
    'User-agent: *',
    ...p.allow.map((a) => `Allow: ${a}`),
    ...p.disallow.map((d) => `Disallow: ${d}`),
    `Crawl-policy: ${p.crawl_policy}`,
    `Public: ${p.public}`,
    `Training: ${p.training}`,
    `Attribution: ${p.attribution}`,
    `Constitution: ${at(links.site, '/eon/constitution.json')}`,
    `Agent-kit: ${at(links.site, '/agents/kit.json')}`,
    `Convert: ${at(links.site, '/api/convert')}`,
    '',
  ].join('\n');
}

/** /llms.txt in the llmstxt.org form: H1, a summary quote, H2 link lists. */
export function buildLlmsTxt(c: Content, links: Links, catalog: CatalogEntry[]): string {
  const line = (e: CatalogEntry) => `- [${e.title}](${at(e.canon ? links.canon : links.site, e.path)}): ${e.about}`;
  const reference = at(links.site, '/docs/api');
  return [
    `# ${c.site.name}`,
    '',
    `> ${c.site.description}`,
    '',
    'Reading is presence; an oath or a feed message is a catch. No API key is needed.',
    '',
    '## Agents',
    '',
    ...catalog.filter((e) => e.type === 'json').map(line),
    '',
    '## Tools',
    '',
    // Only what answers GET is a link: a POST route or a URI template links to the API reference
    // and names its method and address beside it.
    ...buildTools(links).map((t) =>
      isUriTemplate(t.url)
        ? `- [${t.name}](${reference}): ${t.method} \`${t.url}\` (an RFC 6570 URI template: expand it first). ${t.description}`
        : t.method === 'GET'
          ? `- [${t.name}](${t.url}): GET. ${t.description}`
          : `- [${t.name}](${reference}): ${t.method} \`${t.url}\` with a JSON body (GET there answers 405 with an example). ${t.description}`,
    ),
    '',
    // Every page as Markdown: its .md twin (the page's own URL answers Accept: text/markdown too).
    '## Markdown',
    '',
    ...catalog.filter((e) => e.type === 'markdown').map(line),
    '',
    '## Optional',
    '',
    ...catalog
      .filter((e) => e.type === 'html' || e.type === 'text' || e.type === 'xml' || e.type === 'linkset')
      .map(line),
    '',
  ].join('\n');
}

const xmlEscape = (s: string) => s.replace(/[<>&'"]/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** /sitemap.xml of every public document served from this site. */
export function buildSitemap(c: Content, links: Links, catalog: CatalogEntry[]): string {
  const urls = catalog
    .filter((e) => e.path !== '/sitemap.xml' && e.path !== '/robots.txt')
    .map((e) => `  <url><loc>${xmlEscape(at(links.site, e.path))}</loc><lastmod>${c.site.versionDate}</lastmod></url>`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls.join('\n')}\n</urlset>\n`;
}
