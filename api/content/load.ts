import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import yaml from 'js-yaml';
import type { z } from 'zod';
import {
  ConvertContentSchema,
  CrawlPolicySchema,
  DoctrineFrontmatterSchema,
  IngressContentSchema,
  KitContentSchema,
  NodeProtocolSchema,
  PropertyContentSchema,
  publishable,
  SiteSchema,
  TrackSchema,
  type DoctrineFrontmatter,
} from '../schemas/content.ts';
import { ConstitutionSchema } from '../schemas/constitution.ts';
import { BotFamiliesSchema, BotIpRangesSchema, GeneratedBotFamiliesSchema } from '../schemas/bot-families.ts';
import { AiReferrersSchema } from '../schemas/ai-referrers.ts';

/**
 * Every content file with the schema that validates it; no file may publish a placeholder URL.
 * `src/content.config.ts` declares one collection per entry from this same table, so Astro and
 * the engine read content alike (and a placeholder fails the build, naming file and field).
 */
export const CONTENT_FILES = {
  site: { file: 'site.yaml', schema: publishable(SiteSchema) },
  track: { file: 'track.yaml', schema: publishable(TrackSchema) },
  nodeProtocol: { file: 'node-protocol.yaml', schema: publishable(NodeProtocolSchema) },
  convert: { file: 'convert.yaml', schema: publishable(ConvertContentSchema) },
  crawlPolicy: { file: 'crawl-policy.yaml', schema: publishable(CrawlPolicySchema) },
  ingress: { file: 'ingress.yaml', schema: publishable(IngressContentSchema) },
  kit: { file: 'kit.yaml', schema: publishable(KitContentSchema) },
  property: { file: 'property.yaml', schema: publishable(PropertyContentSchema) },
  constitution: { file: 'constitution.yaml', schema: publishable(ConstitutionSchema) },
  botFamilies: { file: 'bot-families.yaml', schema: publishable(BotFamiliesSchema) },
  botFamiliesGenerated: { file: 'bot-families.generated.json', schema: publishable(GeneratedBotFamiliesSchema) },
  botIpRanges: { file: 'bot-ip-ranges.yaml', schema: publishable(BotIpRangesSchema) },
  aiReferrers: { file: 'ai-referrers.yaml', schema: publishable(AiReferrersSchema) },
} as const;

export type ContentKey = keyof typeof CONTENT_FILES;
/** All validated data content, keyed like CONTENT_FILES. */
export type Content = { [K in ContentKey]: z.output<(typeof CONTENT_FILES)[K]['schema']> };

/** A doctrine note: validated frontmatter and its Markdown body. */
export interface DoctrineNote {
  slug: string;
  data: DoctrineFrontmatter;
  body: string;
}

export const DOCTRINE_SLUGS = ['node-protocol', 'model-collapse-vs-constitutional-drift'] as const;

/** Thrown when a content file is missing or fails its schema; names the file and the fields. */
export class ContentError extends Error {
  override name = 'ContentError';
  readonly file: string;
  readonly issues: string[];
  constructor(file: string, issues: string[]) {
    super(`${file}: ${issues.join('; ')}`);
    this.file = file;
    this.issues = issues;
  }
}

/**
 * YAML 1.2's core schema (no timestamps: a date stays the string the editor wrote), read by js-yaml:
 * five times faster than the `yaml` package on content/ (55 against 300 ms at a start), which stays
 * for the one tool that rewrites a file keeping its comments (api/telemetry/verification/ip-ranges.ts).
 */
const parseYaml = (text: string): unknown => yaml.load(text, { schema: yaml.CORE_SCHEMA });

function validate<S extends z.ZodType>(schema: S, data: unknown, file: string): z.output<S> {
  const result = schema.safeParse(data);
  if (!result.success) {
    throw new ContentError(
      file,
      result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  return result.data;
}

/** Reads and validates one data file of `content/`. */
export async function loadContentFile<K extends ContentKey>(dir: string, key: K): Promise<Content[K]> {
  const { file, schema } = CONTENT_FILES[key];
  const text = await readFile(join(dir, file), 'utf8');
  // JSON for the generated table, YAML for the rest.
  return validate(schema, file.endsWith('.json') ? JSON.parse(text) : parseYaml(text), file) as Content[K];
}

/** Reads and validates every data file of `content/`. */
export async function loadContent(dir: string): Promise<Content> {
  const keys = Object.keys(CONTENT_FILES) as ContentKey[];
  const values = await Promise.all(keys.map((k) => loadContentFile(dir, k)));
  return Object.fromEntries(keys.map((k, i) => [k, values[i]])) as Content;
}

/** Splits a Markdown file into validated frontmatter and body. */
export function parseDoctrine(slug: string, text: string): DoctrineNote {
  const file = `doctrine/${slug}.md`;
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) throw new ContentError(file, ['(root): missing YAML frontmatter between --- lines']);
  return { slug, data: validate(DoctrineFrontmatterSchema, parseYaml(match[1]!), file), body: match[2]!.trimStart() };
}

export async function loadDoctrine(dir: string, slug: string): Promise<DoctrineNote> {
  return parseDoctrine(slug, await readFile(join(dir, 'doctrine', `${slug}.md`), 'utf8'));
}
