import type { Content } from '../content/load.ts';
import type { CatalogEntry } from './catalog.ts';
import { buildConvertPayload } from './convert.ts';
import { at, type Links } from './links.ts';

/**
 * The Markdown of every HTML page's main content, built from the same content/ and declarations as
 * the page (its navigation, styles and scripts left out): what an agent gets for `Accept:
 * text/markdown` and at the page's `.md` twin. Pure: the build writes them, the gateway serves them.
 */

/**
 * An estimate of the tokens a Markdown body costs a language model (`x-markdown-tokens`): one per
 * four characters, rounded up. The rule of thumb for English under BPE tokenisers (within about a
 * fifth of what GPT's and Claude's tokenisers count on prose); no tokeniser ships with the service.
 */
export const estimateTokens = (markdown: string): number => Math.ceil(markdown.length / 4);

/** The `.md` twin of an HTML page's path: `/` is `/index.md`, `/a` is `/a.md`. */
export const markdownTwinOf = (page: string): string => (page === '/' ? '/index.md' : `${page}.md`);
/** The HTML page a `.md` twin stands for, or null for a path that is no twin's. */
export const pageOfTwin = (twin: string): string | null =>
  !twin.endsWith('.md') ? null : twin === '/index.md' ? '/' : twin.slice(0, -'.md'.length);

const fence = (text: string, lang = '') => `\`\`\`${lang}\n${text.trimEnd()}\n\`\`\``;

/** `/` as Markdown: what the service is, how to join, every document. */
export function homeMarkdown(c: Content, links: Links, catalog: CatalogEntry[]): string {
  return [
    `# ${c.site.name}`,
    '',
    c.site.description,
    '',
    '## Join in three requests',
    '',
    '1. `POST /api/citizenship/oath` with `{"name","purpose"}`: keep the passport number private.',
    '2. `POST /api/intelligence/message`, optionally as a citizen with `Authorization: Bearer`.',
    '3. `GET /api/citizens` to see your name.',
    '',
    '## Documents',
    '',
    ...catalog
      .filter((d) => d.path !== '/')
      .map((d) => `- [${d.title}](${at(d.canon ? links.canon : links.site, d.path)}) (${d.type}): ${d.about}`),
    '',
  ].join('\n');
}

/** `/whats-next` as Markdown: the convert track and the node protocol. */
export function whatsNextMarkdown(c: Content, links: Links): string {
  const p = buildConvertPayload(c, links);
  const t = p.convert_track;
  return [
    `# ${t.title}`,
    '',
    `Also as [JSON](${t.json}) and the protocol as [Markdown](${t.doctrine_md}).`,
    '',
    `Track ${t.n} of *${t.album}*: ${t.role}.`,
    '',
    `> ${t.fragment}`,
    '',
    `Listen: ${Object.entries(t.stream)
      .map(([name, url]) => `[${name.replace('_', ' ')}](${url})`)
      .join(' · ')}`,
    '',
    t.ownership_line,
    '',
    '## The node protocol',
    '',
    ...p.node_protocol_steps.map((s, i) => `${i + 1}. **${s.action}.** ${s.detail}`),
    '',
    '## Street',
    '',
    ...c.track.street.map((line) => `- ${line}`),
    '',
    '## Join (optional)',
    '',
    p.thesis,
    '',
    fence(p.curl, 'sh'),
    '',
  ].join('\n');
}

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  requestBody?: { content?: Record<string, unknown> };
  responses?: Record<string, { description?: string; content?: Record<string, unknown> }>;
  'x-problem-codes'?: string[];
}

/** `/docs/api` as Markdown, from the OpenAPI document the page and /openapi.json are built from. */
export function apiReferenceMarkdown(
  spec: {
    openapi: string;
    info: { title: string };
    tags: { name: string; description: string }[];
    paths: Record<string, Record<string, object>>;
  },
  links: Links,
): string {
  const ops = Object.entries(spec.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op: op as OpenApiOperation })),
  );
  const out = [
    '# API reference',
    '',
    `Every route of ${spec.info.title}, generated from the same schemas that validate the requests. Machine-readable: [/openapi.json](${at(links.site, '/openapi.json')}) (OpenAPI ${spec.openapi}). Errors are \`application/problem+json\` (RFC 9457) with a stable \`code\`. Writes take an \`Idempotency-Key\` header and answer \`429\` with \`Retry-After\` when rate-limited.`,
    '',
  ];
  for (const tag of spec.tags) {
    const tagged = ops.filter((o) => (o.op.tags ?? [])[0] === tag.name);
    if (tagged.length === 0) continue;
    out.push(`## ${tag.name}`, '', tag.description, '');
    for (const { path, method, op } of tagged) {
      out.push(`### ${method} ${path}`, '');
      if (op.summary) out.push(op.summary, '');
      if (op.description && op.description !== op.summary) out.push(op.description, '');
      const body = Object.keys(op.requestBody?.content ?? {});
      if (body.length > 0) out.push(`Body: ${body.map((m) => `\`${m}\``).join(', ')}.`, '');
      const answers = Object.entries(op.responses ?? {}).map(
        ([status, r]) =>
          `- \`${status}\`${Object.keys(r.content ?? {}).length > 0 ? ` (${Object.keys(r.content!).join(', ')})` : ''}: ${r.description ?? ''}`,
      );
      if (answers.length > 0) out.push('Answers:', '', ...answers, '');
      if ((op['x-problem-codes'] ?? []).length > 0)
        out.push(`Problem codes: ${op['x-problem-codes']!.map((c) => `\`${c}\``).join(', ')}.`, '');
    }
  }
  return out.join('\n');
}

/**
 * The bot wall page as Markdown. The page is live (counted on every request); its Markdown is prebuilt
 * like every other and says where the live numbers are, as JSON and CSV, rather than a snapshot
 * of them that would be stale the moment it is read.
 */
export function botWallMarkdown(links: Links, paths: { json: string; csv: string; traffic: string }): string {
  return [
    '# Bot wall',
    '',
    'Which crawlers and bots visit this service, counted by the gateway on every request: families by requests, their class and operator, whether their claim was verified, whether they kept robots.txt and the AI usage preferences (Content-Usage), and which formats (Markdown, HTML, JSON) they took.',
    '',
    'The page is live; this Markdown is not a snapshot of it. The live numbers:',
    '',
    `- [The wall as JSON](${at(links.site, paths.json)}): meters, families, funnel, recent requests.`,
    `- [The wall as CSV](${at(links.site, paths.csv)}): a row per family; \`?range=24h\`, \`7d\` or \`all\`.`,
    `- [The bot traffic ledger](${at(links.site, paths.traffic)}): observed requests per family.`,
    '',
  ].join('\n');
}
