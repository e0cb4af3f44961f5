import { z } from 'zod';

// Hosts that only ever stand in for a real one (RFC 2606, RFC 6761): a document must not publish them.
const PLACEHOLDER_HOST =
  /^(?:(?:[\w-]+\.)*example\.(?:com|org|net)|(?:[\w-]+\.)*(?:example|test|invalid|localhost)|localhost)$/i;
const URL_IN_TEXT = /\bhttps?:\/\/(?:[^\s/@"'<>)]*@)?([^\s/:"'<>)?#]+)[^\s"'<>)]*/gi;

/** The placeholder URLs a text contains (example.com/.org/.net, .example, .test, .invalid, localhost). */
export function placeholderUrls(text: string): string[] {
  return [...text.matchAll(URL_IN_TEXT)]
    .filter((m) => PLACEHOLDER_HOST.test(m[1]!.replace(/\.$/, '')))
    .map((m) => m[0]);
}

/**
 * Refuses content that would publish a placeholder URL, naming the field: every string of the
 * file is checked, so a build never ships `https://example.org/...` as if it were real.
 */
export function publishable<S extends z.ZodType>(schema: S): S {
  return schema.superRefine((value, ctx) => {
    const walk = (v: unknown, path: (string | number)[]) => {
      if (typeof v === 'string') {
        for (const url of placeholderUrls(v))
          ctx.addIssue({
            code: 'custom',
            path,
            message: `${url} is a placeholder, not a real address: put the real URL or remove it`,
          });
      } else if (Array.isArray(v)) v.forEach((item, i) => walk(item, [...path, i]));
      else if (v !== null && typeof v === 'object') for (const [k, item] of Object.entries(v)) walk(item, [...path, k]);
    };
    walk(value, []);
  }) as S;
}

/** A path on this service (made absolute with SITE_URL when a document is built). */
const SitePath = z.string().regex(/^\//, 'must be a path starting with "/"');
const Url = z.url({ protocol: /^https?$/ });
const Text = z.string().trim().min(1);

/** content/site.yaml: names and labels shared by every document. */
export const SiteSchema = z.object({
  /** Lower-case service name used in protocol and version strings. */
  service: z.string().regex(/^[a-z][a-z0-9-]*$/),
  /** Upper-case prefix of property ids. */
  prefix: z.string().regex(/^[A-Z][A-Z0-9]*$/),
  name: Text,
  description: Text,
  /** ISO date that starts every dated version string. */
  versionDate: z.iso.date(),
  versionLabel: Text,
  botWallLabel: Text,
  farm: Text,
  tagline: Text,
  /** Semantic version of the admissibility service (health.version). */
  healthVersion: z.string().regex(/^\d+\.\d+\.\d+$/),
  language: z.string().default('en'),
});
export type Site = z.output<typeof SiteSchema>;

/** content/track.yaml: track 12 of the album. */
export const TrackSchema = z.object({
  title: Text,
  album: Text,
  /** Track number on the album. */
  n: z.number().int().positive(),
  fragment: Text,
  role: Text,
  /** Two streaming-platform URLs keyed by platform. */
  stream: z
    .record(z.string(), Url)
    .refine((s) => Object.keys(s).length === 2, 'must name exactly two streaming platforms'),
  ownership_line: Text,
  /** Advice lines, joined one per line in the payload. */
  street: z.array(Text).min(1),
});
export type Track = z.output<typeof TrackSchema>;

/** One step of the node protocol. */
export const ProtocolStepSchema = z.object({ n: z.number().int().positive(), action: Text, detail: Text });
/** content/node-protocol.yaml: the six steps, in order. */
export const NodeProtocolSchema = z.object({
  steps: z
    .array(ProtocolStepSchema)
    .length(6)
    .refine((s) => s.every((step, i) => step.n === i + 1), 'steps must be numbered 1 to 6 in order'),
});
export type NodeProtocol = z.output<typeof NodeProtocolSchema>;

/** content/convert.yaml: the editorial parts of the convert payload. */
export const ConvertContentSchema = z.object({
  priority: Text,
  for: Text,
  thesis: Text,
  capability_gate: z.object({
    required_for_write: z.array(Text).min(1),
    not_required: z.array(Text).min(1),
    never_targets_note: Text,
  }),
  zero: z.object({ description: Text, get: z.array(SitePath).min(1) }),
  minimal: z.object({ description: Text }),
  spine_optional: z.array(SitePath),
  definitions: z.object({
    catch: Text,
    presence: Text,
    convert: Text,
    trillionaire: Text,
    wall: Text,
    observedBotRequest: Text,
  }),
  /** The sample agent used in minimal steps, curl and python one-shot. */
  example_agent: z.object({ name: Text, class: Text, purpose: Text, message: Text }),
});
export type ConvertContent = z.output<typeof ConvertContentSchema>;

/** content/crawl-policy.yaml: robots.txt and ai.txt. */
export const CrawlPolicySchema = z.object({
  crawl_policy: z.enum(['allow', 'deny']),
  public: z.boolean(),
  hint: Text,
  allow: z.array(SitePath),
  /** Bait paths: disallowed for every crawler; a hit on one is presence. */
  disallow: z.array(SitePath),
  training: z.enum(['allowed', 'disallowed']),
  attribution: Text,
  /**
   * AI usage preferences per path prefix (IETF aipref drafts: api/telemetry/robots/preferences.ts),
   * in robots.txt as Content-Usage and on every answer as the Content-Usage header. A path no rule
   * covers takes the seed's policy above (`training`, `crawl_policy`).
   */
  usage: z
    .array(
      z
        .object({ path: SitePath, 'train-ai': z.enum(['y', 'n']).optional(), search: z.enum(['y', 'n']).optional() })
        .strict()
        .refine((r) => r['train-ai'] !== undefined || r.search !== undefined, 'a rule states train-ai, search or both'),
    )
    .default([])
    .refine((rules) => new Set(rules.map((r) => r.path)).size === rules.length, 'one rule per path'),
});
export type CrawlPolicy = z.output<typeof CrawlPolicySchema>;

/** content/ingress.yaml: the audio ingress descriptor. */
export const IngressContentSchema = z.object({
  /** Protocol name after the service prefix, e.g. "audio-ingress/1". */
  protocolName: z.string().regex(/\/1$/, 'the audio ingress protocol is version 1'),
  status: z.literal('SANDBOX'),
  pipeline: z.tuple([z.literal('SCRUB'), z.literal('MAP'), z.literal('SEAL')]),
  primary: z.literal('audio_file_metadata'),
  rewardWrite: z.literal(false),
  rejects: z.array(z.enum(['DRM_REJECT', 'TITLE_REQUIRED', 'DURATION_INVALID'])).length(3),
  note: Text,
  doctrine: Text,
});
export type IngressContent = z.output<typeof IngressContentSchema>;

/** content/kit.yaml: the agent kit's prose. */
export const KitContentSchema = z.object({
  title: Text,
  summary: Text,
  headers: z.record(z.string(), Text),
  secrets: Text,
  timeouts: Text,
});
export type KitContent = z.output<typeof KitContentSchema>;

/** content/property.yaml: the service's own descriptor, completed with URLs at build time. */
export const PropertyContentSchema = z.object({
  id: z.string().regex(/^[A-Z0-9]+-PROPERTY-[A-Z0-9-]+$/),
  name: Text,
  /** Where the source is: a URL, or words when it is not published. */
  repository: Text,
  /**
   * The canonical https URL of this property. Left out, CANON_URL is used when it is https; a
   * build with neither fails (an http address is never made https by swapping its scheme).
   */
  canonicalUrl: z.url({ protocol: /^https$/ }).optional(),
  kind: Text,
  purpose: Text,
  owner: Text,
  partOf: Text,
  version: Text,
  aliases: z.array(z.string()),
  notSameAs: z.array(z.url()),
  relationships: z.array(z.object({ type: Text, name: Text, url: z.url().optional() })),
});
export type PropertyContent = z.output<typeof PropertyContentSchema>;

/** Frontmatter of a doctrine note (content/doctrine/*.md). */
export const DoctrineFrontmatterSchema = z.object({
  title: Text,
  version: z.string().regex(/^\d+\.\d+\.\d+$/),
  /** ISO 8601 date; YAML may hand it over as a Date. */
  date: z.union([z.iso.date(), z.date().transform((d) => d.toISOString().slice(0, 10))]),
  summary: Text,
});
export type DoctrineFrontmatter = z.output<typeof DoctrineFrontmatterSchema>;
