import { isIP } from 'node:net';
import { parseDocument } from 'yaml';
import { BotIpRangesSchema, type RANGE_FORMATS } from '../../schemas/bot-families.ts';

type RangeFormat = (typeof RANGE_FORMATS)[number];

const isPrefix = (text: string) => {
  const [net, bits] = text.split('/') as [string, string | undefined];
  const kind = isIP(net);
  return kind !== 0 && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (kind === 6 ? 128 : 32)));
};

/** Prefixes from a published JSON in Google's format (`prefixes: [{ipv4Prefix | ipv6Prefix}]`), also Bing's, Apple's, OpenAI's, Perplexity's, Common Crawl's. */
export function prefixesOf(body: unknown): string[] {
  const list = (body as { prefixes?: { ipv4Prefix?: string; ipv6Prefix?: string }[] } | null)?.prefixes;
  if (!Array.isArray(list)) throw new Error('no "prefixes" array');
  return list.map((p) => p.ipv4Prefix ?? p.ipv6Prefix).filter((p): p is string => typeof p === 'string');
}

/** Every string in a JSON document that is an address or a prefix (Ahrefs: `{"ips":[{"ip_address":...}]}`). */
export function addressesInJson(body: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      if (isPrefix(v.trim())) out.push(v.trim());
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(body);
  return out;
}

/** One address or prefix a line (Telegram, Pingdom, UptimeRobot); blank lines and # comments skipped. */
export function addressesInText(text: string): string[] {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.replace(/#.*/, '').trim())
    .filter(Boolean);
  const bad = lines.find((l) => !isPrefix(l));
  if (bad !== undefined) throw new Error(`not an address or prefix: ${JSON.stringify(bad.slice(0, 60))}`);
  return lines;
}

/** IPv4 addresses listed in a web page (DuckDuckGo's help page lists DuckDuckBot's in <li> items). */
export function addressesInHtml(html: string): string[] {
  const text = html.replace(/<[^>]*>/g, ' ');
  return [
    ...new Set(
      [...text.matchAll(/(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3}(?:\/\d{1,2})?)(?![\d.])/g)]
        .map((m) => m[1]!)
        .filter(isPrefix),
    ),
  ];
}

/** Reads a fetched body in its publisher's format; throws when it holds no address at all. */
export function parseRangeBody(format: RangeFormat, body: string): string[] {
  const prefixes =
    format === 'google-json'
      ? prefixesOf(JSON.parse(body))
      : format === 'json-addresses'
        ? addressesInJson(JSON.parse(body))
        : format === 'text'
          ? addressesInText(body)
          : addressesInHtml(body);
  if (prefixes.length === 0) throw new Error('no addresses in the answer');
  return prefixes;
}

export interface RefreshReport {
  list: string;
  prefixes?: number;
  error?: string;
}

/**
 * Rewrites the text of content/bot-ip-ranges.yaml with freshly fetched prefixes, keeping its
 * comments. A list whose sources all answer gets their union; a list with a failing source keeps
 * its old prefixes and is reported; a list without sources keeps its snapshot. The result is
 * validated before it is returned, so a bad answer never reaches the content a build reads.
 */
export async function refreshRanges(
  text: string,
  fetchText: (url: string) => Promise<string>,
  today: string,
): Promise<{ text: string; report: RefreshReport[] }> {
  const doc = parseDocument(text);
  const current = BotIpRangesSchema.parse(doc.toJS());
  const report: RefreshReport[] = [];
  let changed = false;
  for (const [name, list] of Object.entries(current.lists)) {
    if (list.sources.length === 0) continue;
    try {
      const prefixes: string[] = [];
      for (const source of list.sources) {
        try {
          prefixes.push(...parseRangeBody(source.format, await fetchText(source.url)));
        } catch (error) {
          throw new Error(`${source.url}: ${(error as Error).message}`);
        }
      }
      const unique = [...new Set(prefixes)];
      doc.setIn(['lists', name, 'prefixes'], doc.createNode(unique, { flow: true }));
      report.push({ list: name, prefixes: unique.length });
      changed = true;
    } catch (error) {
      report.push({ list: name, error: `kept the old prefixes (${(error as Error).message})` });
    }
  }
  if (changed) doc.set('updated', today);
  BotIpRangesSchema.parse(doc.toJS());
  return { text: doc.toString({ lineWidth: 0 }), report };
}
