import { isIP } from 'node:net';
import { z } from 'zod';

export const BOT_CLASSES = ['Crawler', 'Bot', 'Eater', 'Intelligence', 'Cosplay'] as const;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
/** An agent origin: https, or http on the loopback interface (tests and local agents). */
const SignatureAgent = z.url().refine((u) => {
  const url = new URL(u);
  return url.origin === u.replace(/\/$/, '') && (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname)));
}, 'must be an origin such as https://chatgpt.com (http only on the loopback interface)');

/** One known crawler or bot family. */
export const BotFamilySchema = z.object({
  family: z.string().min(1),
  operator: z.string().min(1),
  /** Whole User-Agent product tokens that name this family. */
  tokens: z.array(z.string().min(1)).min(1),
  kind: z.enum(['search', 'advertising', 'preview', 'ai-training', 'ai-assistant', 'seo', 'monitor', 'other']),
  class: z.enum(BOT_CLASSES),
  /** Host name suffixes for reverse DNS with forward confirmation, where the operator documents them. */
  rdns: z.array(z.string().regex(/^\.[a-z0-9.-]+$/)).optional(),
  /** Web Bot Auth: origins whose key directory signs this family's requests (Signature-Agent). */
  signature_agents: z.array(SignatureAgent).optional(),
});
export type BotFamily = z.output<typeof BotFamilySchema>;

/** content/bot-families.yaml. */
export const BotFamiliesSchema = z.object({ families: z.array(BotFamilySchema).min(1) });

/** Search, advertising and link-preview families: presence only, never conversion targets. */
export const neverTargets = (families: BotFamily[]): string[] =>
  families.filter((f) => f.kind === 'search' || f.kind === 'advertising' || f.kind === 'preview').map((f) => f.family);

const Cidr = z.string().refine((c) => /^[0-9a-f.:]+\/\d{1,3}$/i.test(c) && isIP(c.split('/')[0]!) !== 0, 'must be an IPv4 or IPv6 prefix such as 66.249.64.0/19');

/** content/bot-ip-ranges.yaml: operators' published address ranges, by family. */
export const BotIpRangesSchema = z.object({
  updated: z.iso.date(),
  families: z.record(z.string(), z.object({ source: z.url({ protocol: /^https$/ }), prefixes: z.array(Cidr) })),
});
export type BotIpRanges = z.output<typeof BotIpRangesSchema>;
