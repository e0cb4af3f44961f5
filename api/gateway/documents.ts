import type { CatalogEntry } from '../documents/catalog.ts';
import { estimateTokens, pageOfTwin } from '../documents/markdown.ts';
import { linkHeaders } from '../documents/representations.ts';
import { preferenceOf, serialisePreference, type UsageRule } from '../telemetry/robots/preferences.ts';
import { withDocumentHeaders, type StaticFile } from './static-site.ts';

/** Vary of a path that answers HTML or Markdown by Accept, each in three codings. */
export const NEGOTIATED_VARY = 'Accept, Accept-Encoding';

/** The documents as the gateway serves them: every header a read sends made here, once, at start. */
export interface Documents {
  files: Map<string, StaticFile>;
  /** The Markdown a page path answers (prebuilt or live page) when the request prefers text/markdown. */
  markdown: Map<string, StaticFile>;
  /** Link, Content-Usage and Vary of an answer the gateway does not hold (an engine document, a live page). */
  headersOf(path: string): Record<string, string>;
}

/** The format the bot ledger counts an answer of this Content-Type as. */
export function formatOf(type: string | undefined): 'markdown' | 'html' | 'json' | undefined {
  if (type === undefined) return undefined;
  if (/^text\/markdown\b/i.test(type)) return 'markdown';
  if (/^text\/html\b/i.test(type)) return 'html';
  if (/^application\/(?:[\w.-]+\+)?json\b/i.test(type)) return 'json';
  return undefined;
}

/** The file with the format and token estimate a read of it is counted with. */
function counted(file: StaticFile): StaticFile {
  const format = formatOf(file.type);
  if (format !== undefined) file.format = format;
  if (format === 'markdown') file.tokens = estimateTokens(file.body.toString('utf8'));
  return file;
}

/** The path a built file is the document of: `/a/index.html` and `/a/` are `/a`. */
const canonical = (key: string) =>
  key === '/' || key === '/index.html'
    ? '/'
    : key.endsWith('/index.html')
      ? key.slice(0, -'/index.html'.length)
      : key.length > 1 && key.endsWith('/')
        ? key.slice(0, -1)
        : key;

/**
 * Every prebuilt file with its Link header (api/documents/representations.ts), its Content-Usage
 * (the operator's AI usage preference of its path) and, for Markdown, `x-markdown-tokens`; every
 * page with a `.md` twin made to vary on Accept, and the twin as the page's negotiated answer
 * (its own ETag, `Content-Location` naming the twin).
 */
export function prepareDocuments(
  built: Map<string, StaticFile>,
  catalog: CatalogEntry[],
  usage: readonly UsageRule[],
): Documents {
  const links = linkHeaders(catalog);
  const usageOf = (path: string): string[] => {
    const value = serialisePreference(preferenceOf(path, usage));
    return value === '' ? [] : ['content-usage', value];
  };
  const linkOf = (path: string): string[] => {
    const value = links.get(path);
    return value === undefined ? [] : ['link', value];
  };
  const tokensOf = (file: StaticFile): string[] =>
    file.type.startsWith('text/markdown')
      ? ['x-markdown-tokens', String(estimateTokens(file.body.toString('utf8')))]
      : [];

  // Pages with a twin: those a `.md` file of the build stands for, served prebuilt or live.
  const twins = new Map<string, StaticFile>();
  for (const [key, file] of built) {
    const page = pageOfTwin(key);
    if (page !== null && file.type.startsWith('text/markdown')) twins.set(page, file);
  }

  const files = new Map<string, StaticFile>();
  const made = new Map<StaticFile, StaticFile>();
  for (const [key, file] of built) {
    let served = made.get(file);
    if (!served) {
      const path = canonical(key);
      const negotiated = twins.has(path) && file.type.startsWith('text/html');
      served = counted(
        withDocumentHeaders(
          file,
          [...linkOf(path), ...usageOf(path), ...tokensOf(file)],
          negotiated ? NEGOTIATED_VARY : undefined,
        ),
      );
      made.set(file, served);
    }
    files.set(key, served);
  }

  const markdown = new Map<string, StaticFile>();
  for (const [page, twin] of twins) {
    const twinPath = page === '/' ? '/index.md' : `${page}.md`;
    markdown.set(
      page,
      counted(
        withDocumentHeaders(
          twin,
          ['content-location', twinPath, ...linkOf(page), ...usageOf(page), ...tokensOf(twin)],
          NEGOTIATED_VARY,
        ),
      ),
    );
  }

  return {
    files,
    markdown,
    headersOf(path) {
      const out: Record<string, string> = {};
      const link = links.get(path);
      if (link !== undefined) out.Link = link;
      const value = serialisePreference(preferenceOf(path, usage));
      if (value !== '') out['Content-Usage'] = value;
      if (twins.has(path)) out.Vary = NEGOTIATED_VARY;
      return out;
    },
  };
}
