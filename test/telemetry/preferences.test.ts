import { describe, expect, it } from 'vitest';
import { CrawlPolicySchema } from '../../api/schemas/content.ts';
import {
  breaksPreference,
  parsePreference,
  preferenceOf,
  robotsLines,
  serialisePreference,
  usageRulesOf,
} from '../../api/telemetry/robots/preferences.ts';

const seed = { crawl_policy: 'allow', training: 'allowed' } as const;

describe('AI usage preferences (draft-ietf-aipref-vocab-08, draft-ietf-aipref-attach-05)', () => {
  it('serialises as a Structured Field Dictionary in vocabulary order, and reads one as a client does', () => {
    expect(serialisePreference({ search: 'y', 'train-ai': 'n' })).toBe('train-ai=n, search=y');
    expect(serialisePreference({})).toBe('');
    expect(parsePreference('train-ai=n, search=y')).toEqual({ 'train-ai': 'n', search: 'y' });
    // Unknown keys and parameters ignored; a value other than the tokens y or n leaves the category unknown.
    expect(parsePreference('train-genai=n;x=1, search=y;foo, train-ai="n"')).toEqual({ search: 'y' });
    // A duplicated key: the last one (RFC 9651 Dictionary).
    expect(parsePreference('train-ai=y, train-ai=n')).toEqual({ 'train-ai': 'n' });
  });

  it("defaults to the seed's policy and lets the longest prefix decide, category by category", () => {
    const rules = usageRulesOf({
      ...seed,
      usage: [
        { path: '/private/', 'train-ai': 'n' },
        { path: '/private/open/', 'train-ai': 'y' },
      ],
    });
    expect(preferenceOf('/', rules)).toEqual({ 'train-ai': 'y', search: 'y' });
    expect(preferenceOf('/private/a', rules)).toEqual({ 'train-ai': 'n', search: 'y' });
    expect(preferenceOf('/private/open/a', rules)).toEqual({ 'train-ai': 'y', search: 'y' });
    expect(usageRulesOf({ crawl_policy: 'deny', training: 'disallowed' })).toEqual([
      { path: '/', preference: { 'train-ai': 'n', search: 'n' } },
    ]);
    // A rule for / itself replaces the seed's.
    expect(preferenceOf('/x', usageRulesOf({ ...seed, usage: [{ path: '/', search: 'n' }] }))).toEqual({ search: 'n' });
  });

  it('writes robots.txt rules, the root one without a path', () => {
    const rules = usageRulesOf({ ...seed, usage: [{ path: '/bot-wall', 'train-ai': 'n', search: 'y' }] });
    expect(robotsLines(rules)).toEqual([
      'Content-Usage: train-ai=y, search=y',
      'Content-Usage: /bot-wall train-ai=n, search=y',
    ]);
  });

  it("judges a family's purpose against the preference", () => {
    expect(breaksPreference('ai-training', { 'train-ai': 'n' })).toBe(true);
    expect(breaksPreference('ai-training', { 'train-ai': 'y' })).toBe(false);
    expect(breaksPreference('ai-training', {})).toBe(false);
    expect(breaksPreference('search', { search: 'n' })).toBe(true);
    expect(breaksPreference('ai-search', { search: 'n', 'train-ai': 'y' })).toBe(true);
    expect(breaksPreference('ai-assistant', { search: 'n', 'train-ai': 'n' })).toBe(false);
    expect(breaksPreference(undefined, { 'train-ai': 'n' })).toBe(false);
  });

  it('refuses a crawl policy whose rules are not the vocabulary or repeat a path', () => {
    const base = {
      crawl_policy: 'allow',
      public: true,
      hint: 'h',
      allow: ['/'],
      disallow: [],
      training: 'allowed',
      attribution: 'a',
    };
    expect(CrawlPolicySchema.safeParse({ ...base, usage: [{ path: '/a', 'train-ai': 'n' }] }).success).toBe(true);
    expect(CrawlPolicySchema.safeParse({ ...base, usage: [{ path: '/a', 'train-ai': 'no' }] }).success).toBe(false);
    expect(CrawlPolicySchema.safeParse({ ...base, usage: [{ path: '/a', 'train-genai': 'n' }] }).success).toBe(false);
    expect(CrawlPolicySchema.safeParse({ ...base, usage: [{ path: '/a' }] }).success).toBe(false);
    expect(CrawlPolicySchema.safeParse({ ...base, usage: [{ path: 'a', search: 'n' }] }).success).toBe(false);
    expect(
      CrawlPolicySchema.safeParse({
        ...base,
        usage: [
          { path: '/a', search: 'n' },
          { path: '/a', search: 'y' },
        ],
      }).success,
    ).toBe(false);
  });
});
