import { parseDocument } from 'yaml';
import { BotIpRangesSchema } from '../schemas/bot-families.ts';

/** Prefixes from a published JSON in Google's format (`prefixes: [{ipv4Prefix | ipv6Prefix}]`), also used by Bing, OpenAI and Perplexity. */
export function prefixesOf(body: unknown): string[] {
  const list = (body as { prefixes?: { ipv4Prefix?: string; ipv6Prefix?: string }[] } | null)?.prefixes;
  if (!Array.isArray(list)) throw new Error('no "prefixes" array');
  return list.map((p) => p.ipv4Prefix ?? p.ipv6Prefix).filter((p): p is string => typeof p === 'string');
}

/**
 * Rewrites the text of content/bot-ip-ranges.yaml with freshly fetched prefixes, keeping its
 * comments. A source that fails keeps its old prefixes and is reported. The result is validated
 * before it is returned, so a bad answer never reaches the content a build reads.
 */
export async function refreshRanges(text: string, fetchJson: (url: string) => Promise<unknown>, today: string) {
  const doc = parseDocument(text);
  const current = BotIpRangesSchema.parse(doc.toJS());
  const report: { family: string; prefixes?: number; error?: string }[] = [];
  for (const [family, { source }] of Object.entries(current.families)) {
    try {
      const prefixes = prefixesOf(await fetchJson(source));
      doc.setIn(['families', family, 'prefixes'], prefixes);
      report.push({ family, prefixes: prefixes.length });
    } catch (error) {
      report.push({ family, error: `kept the old prefixes (${source}: ${(error as Error).message})` });
    }
  }
  doc.set('updated', today);
  BotIpRangesSchema.parse(doc.toJS());
  return { text: doc.toString(), report };
}
