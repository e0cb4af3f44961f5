import { z } from 'zod';

/** A Referer host, optionally with a path prefix (`bing.com/chat`): lower case, no scheme, no port. */
const ReferrerHost = z
  .string()
  .regex(
    /^[a-z0-9-]+(\.[a-z0-9-]+)+(\/[A-Za-z0-9._~/-]*)?$/,
    'a host such as chatgpt.com, optionally with a path prefix such as bing.com/chat',
  )
  .max(128);

/** content/ai-referrers.yaml: the AI products people arrive from, by operator (what AI sends back). */
export const AiReferrersSchema = z
  .object({
    /** Where the hosts and utm_source values were taken from. */
    sources: z.array(z.object({ title: z.string().min(1), url: z.url() })).min(1),
    operators: z
      .array(
        z.object({
          /** Spelled as in bot-families.yaml, so crawler requests and referred visits meet. */
          operator: z.string().min(1).max(64),
          /** Referer hosts (a subdomain counts as its host), or host and path prefix. */
          hosts: z.array(ReferrerHost).min(1),
          /** utm_source values the product adds to its links (compared in lower case). */
          utm_sources: z.array(z.string().min(1).max(64).toLowerCase()).default([]),
        }),
      )
      .min(1)
      .max(32),
  })
  .superRefine((t, ctx) => {
    const seen = new Map<string, string>();
    for (const o of t.operators) {
      for (const key of [...o.hosts, ...o.utm_sources.map((u) => `utm:${u}`)]) {
        const other = seen.get(key);
        if (other !== undefined && other !== o.operator)
          ctx.addIssue({ code: 'custom', message: `${key} is listed under both ${other} and ${o.operator}` });
        seen.set(key, o.operator);
      }
    }
  });
export type AiReferrers = z.output<typeof AiReferrersSchema>;
