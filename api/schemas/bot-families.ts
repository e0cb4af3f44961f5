import { isIP } from 'node:net';
import { z } from 'zod';

export const BOT_CLASSES = ['Crawler', 'Bot', 'Eater', 'Intelligence', 'Cosplay'] as const;
/** How a claim of a family can be checked. */
export const VERIFY_METHODS = ['ip-ranges', 'reverse-dns', 'web-bot-auth', 'none'] as const;
export type VerifyMethod = (typeof VERIFY_METHODS)[number];

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
/**
 * Where an agent's keys are, the only URLs ever fetched for it: an origin (its well-known
 * directory), or the URL of its JWK Set or Client ID Metadata Document; https, or http on the
 * loopback interface (tests and local agents); no credentials or fragment.
 */
const SignatureAgent = z.url().refine((u) => {
  const url = new URL(u);
  return (
    !url.username &&
    !url.password &&
    !url.hash &&
    (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname)))
  );
}, 'must be an origin such as https://chatgpt.com, or a key set URL on one (http only on the loopback interface)');

/** An IPv4 or IPv6 prefix; a bare address is taken as a /32 or /128. */
const Cidr = z
  .string()
  .transform((c) => (c.includes('/') ? c : `${c}/${isIP(c) === 6 ? 128 : 32}`))
  .refine((c) => {
    const [net, bits] = c.split('/') as [string, string];
    const kind = isIP(net);
    return kind !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (kind === 6 ? 128 : 32);
  }, 'must be an IPv4 or IPv6 prefix such as 66.249.64.0/19');

/** One known crawler, agent or bot family. */
export const BotFamilySchema = z.object({
  /** A clean name without version. */
  family: z.string().min(1).max(64),
  /** Who runs it. */
  operator: z.string().min(1),
  /** Whole User-Agent product tokens that name this family (case-insensitive; several words match in a row). */
  tokens: z.array(z.string().min(1).max(64)).min(1),
  /** What it does; `operator` is the operator's own traffic (health probes, this project's CLIs): named, never counted as a bot. */
  kind: z.enum([
    'search',
    'ai-search',
    'advertising',
    'preview',
    'ai-training',
    'ai-assistant',
    'seo',
    'monitor',
    'feed',
    'archive',
    'tool',
    'operator',
    'other',
  ]),
  /** The class by function; Cosplay is what a failed claim becomes, never written here. */
  class: z.enum(['Crawler', 'Bot', 'Eater', 'Intelligence']),
  /** How a claim can be checked (the wall shows it). */
  verify: z.enum(VERIFY_METHODS),
  /** Host name suffixes for reverse DNS with forward confirmation, exactly as the operator documents them. */
  rdns: z.array(z.string().regex(/^\.[a-z0-9.-]+\.[a-z]+$/)).optional(),
  /** Web Bot Auth: origins whose key directory signs this family's requests (Signature-Agent). */
  signature_agents: z.array(SignatureAgent).optional(),
  /** A generic word (Spider, Code) that names this family only when no more specific token does. */
  weak: z.boolean().default(false),
  /** A robots.txt control token no crawler sends as its User-Agent: a User-Agent claiming it is spoofed. */
  robots_only: z.boolean().default(false),
  /**
   * `kind: operator` only: the ranges (CIDR) the operator publishes its probes come from, beside the
   * operator's own network; from anywhere else its token is a claim like a bot's.
   */
  probes_from: z.array(Cidr).optional(),
});
export type BotFamily = z.output<typeof BotFamilySchema>;

/** Family names and tokens are unique within one table, whatever their case. */
function uniqueNamesAndTokens(families: { family: string; tokens: string[] }[], ctx: z.RefinementCtx): void {
  const names = new Set<string>();
  const tokens = new Map<string, string>();
  families.forEach((f, i) => {
    if (names.has(f.family.toLowerCase()))
      ctx.addIssue({ code: 'custom', path: ['families', i, 'family'], message: `family ${f.family} appears twice` });
    names.add(f.family.toLowerCase());
    for (const t of f.tokens) {
      const owner = tokens.get(t.toLowerCase());
      if (owner && owner !== f.family)
        ctx.addIssue({ code: 'custom', path: ['families', i, 'tokens'], message: `token ${t} already names ${owner}` });
      tokens.set(t.toLowerCase(), f.family);
    }
  });
}

/** content/bot-families.yaml: the curated table; family names and tokens are unique, whatever their case. */
export const BotFamiliesSchema = z
  .object({
    families: z.array(BotFamilySchema).min(1),
    /** Product tokens of people's own clients (podcast apps, TVs, in-app browsers) that User-Agent heuristics take for bots, by kind. */
    human_clients: z.record(z.string(), z.array(z.string().min(1).max(64))).default({}),
  })
  .superRefine((table, ctx) => {
    uniqueNamesAndTokens(table.families, ctx);
    table.families.forEach((f, i) => {
      if (f.verify === 'reverse-dns' && !f.rdns?.length)
        ctx.addIssue({
          code: 'custom',
          path: ['families', i, 'rdns'],
          message: 'verify: reverse-dns needs the documented rdns suffixes',
        });
      if (f.verify === 'web-bot-auth' && !f.signature_agents?.length)
        ctx.addIssue({
          code: 'custom',
          path: ['families', i, 'signature_agents'],
          message: 'verify: web-bot-auth needs signature_agents',
        });
    });
  });
export type BotFamilies = z.output<typeof BotFamiliesSchema>;

/** The lists the generated table is made from. */
export const BOT_LIST_SOURCES = ['device-detector', 'crawler-user-agents'] as const;

/** One family of the generated table: what a maintained list says, nothing we verify. */
export const GeneratedBotFamilySchema = BotFamilySchema.pick({
  family: true,
  operator: true,
  tokens: true,
  kind: true,
  class: true,
}).extend({
  /** The list it comes from: device-detector (Matomo's bots.yml) or crawler-user-agents. */
  source: z.enum(BOT_LIST_SOURCES),
});
export type GeneratedBotFamily = z.output<typeof GeneratedBotFamilySchema>;

/**
 * content/bot-families.generated.json: written by `npm run refresh-bot-families` from the lists the
 * field keeps, never by hand; our curated table wins over it, token by token.
 */
export const GeneratedBotFamiliesSchema = z
  .object({
    /** Where the rows come from and under which licence the file is distributed. */
    notice: z.string(),
    /** Each list with the package version it was read from and its licence. */
    sources: z.array(
      z.object({ name: z.enum(BOT_LIST_SOURCES), package: z.string(), version: z.string(), licence: z.string() }),
    ),
    families: z.array(GeneratedBotFamilySchema),
  })
  .superRefine((table, ctx) => uniqueNamesAndTokens(table.families, ctx));
export type GeneratedBotFamilies = z.output<typeof GeneratedBotFamiliesSchema>;

/** Search, advertising and link-preview families: presence only, never conversion targets. */
export const neverTargets = (families: BotFamily[]): string[] =>
  families.filter((f) => f.kind === 'search' || f.kind === 'advertising' || f.kind === 'preview').map((f) => f.family);

/** The formats operators publish their lists in (see content/bot-ip-ranges.yaml). */
export const RANGE_FORMATS = ['google-json', 'json-addresses', 'text', 'html-addresses'] as const;

/** content/bot-ip-ranges.yaml: operators' published address lists, each for one or more families. */
export const BotIpRangesSchema = z.object({
  /** When the prefixes were last taken from their sources. */
  updated: z.iso.date(),
  lists: z.record(
    z.string(),
    z.object({
      /** Families whose claims this list verifies. */
      families: z.array(z.string().min(1)).min(1),
      /** Where the operator publishes the list (what `npm run refresh-bot-ranges` fetches); empty when it publishes none fetchable. */
      sources: z.array(z.object({ url: z.url({ protocol: /^https$/ }), format: z.enum(RANGE_FORMATS) })),
      /** Where the shipped prefixes come from, when not from `sources`. */
      snapshot: z.string().optional(),
      prefixes: z.array(Cidr),
    }),
  ),
});
export type BotIpRanges = z.output<typeof BotIpRangesSchema>;
