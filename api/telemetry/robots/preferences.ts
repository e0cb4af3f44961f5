/**
 * AI usage preferences (IETF aipref), pure: the vocabulary, its serialisation and which path gets
 * which preference. Both are Internet-Drafts, not RFCs: this follows draft-ietf-aipref-vocab-08
 * (the categories `train-ai` and `search`, the labels `y`/`n`, a Structured Field Dictionary,
 * unknown keys ignored) and draft-ietf-aipref-attach-05 (a `Content-Usage` response header, and
 * `Content-Usage: [path] prefs` rules in robots.txt groups matched by the longest path prefix,
 * as Allow and Disallow are). When they change, this module is the one to change.
 */

/** The vocabulary's usage categories this service states. */
export const USAGE_CATEGORIES = ['train-ai', 'search'] as const;
export type UsageCategory = (typeof USAGE_CATEGORIES)[number];
/** `y` allows the use, `n` refuses it; a category left out is unknown. */
export type UsageLabel = 'y' | 'n';
export type UsagePreference = Partial<Record<UsageCategory, UsageLabel>>;

/** One operator rule of content/crawl-policy.yaml: the preference of every path under `path`. */
export interface UsageRule {
  path: string;
  preference: UsagePreference;
}

/** `train-ai=n, search=y`: the Dictionary serialisation (vocab-08 section 6), categories in vocabulary order. */
export function serialisePreference(p: UsagePreference): string {
  return USAGE_CATEGORIES.filter((c) => p[c] !== undefined)
    .map((c) => `${c}=${p[c]}`)
    .join(', ');
}

/**
 * Reads a Content-Usage value as a client does (vocab-08 section 6.6): members whose value is the
 * token `y` or `n` count, parameters and unknown keys are ignored, a duplicated key keeps the last
 * one (RFC 9651 Dictionary). Anything unparsable leaves the category unknown.
 */
export function parsePreference(value: string): UsagePreference {
  const out: UsagePreference = {};
  for (const member of value.split(',')) {
    const [pair] = member.split(';');
    const m = /^\s*([a-z*][a-z0-9_\-.*]*)\s*=\s*([yn])\s*$/.exec(pair ?? '');
    if (m && (USAGE_CATEGORIES as readonly string[]).includes(m[1]!)) out[m[1] as UsageCategory] = m[2] as UsageLabel;
  }
  return out;
}

/**
 * The operator's rules with the default first: the seed's crawl policy (`training: allowed`,
 * `crawl_policy: allow`) as the preference of `/`, unless a rule states `/` itself.
 */
export function usageRules(
  seed: { crawl_policy: 'allow' | 'deny'; training: 'allowed' | 'disallowed' },
  rules: UsageRule[],
): UsageRule[] {
  const root: UsageRule = {
    path: '/',
    preference: {
      'train-ai': seed.training === 'allowed' ? 'y' : 'n',
      search: seed.crawl_policy === 'allow' ? 'y' : 'n',
    },
  };
  return rules.some((r) => r.path === '/') ? rules : [root, ...rules];
}

/**
 * The preference of `path`: the rule with the longest matching prefix (attach-05 section 5.1, as
 * RFC 9309 matches Allow and Disallow), every category the longer rule leaves out taken from the
 * shorter ones. A plain prefix match: the operator's paths carry no `*` or `$`.
 */
export function preferenceOf(path: string, rules: readonly UsageRule[]): UsagePreference {
  const matching = rules.filter((r) => path.startsWith(r.path)).sort((a, b) => a.path.length - b.path.length);
  return Object.assign({}, ...matching.map((r) => r.preference)) as UsagePreference;
}

/** The robots.txt lines of a group (attach-05 section 5): `Content-Usage: prefs` for `/`, `Content-Usage: /path prefs` else. */
export function robotsLines(rules: readonly UsageRule[]): string[] {
  return [...rules]
    .sort((a, b) => a.path.length - b.path.length)
    .map((r) => `Content-Usage: ${r.path === '/' ? '' : `${r.path} `}${serialisePreference(r.preference)}`);
}

/**
 * A family's purpose (its `kind` in content/bot-families.yaml) as the vocabulary's category of use:
 * a training crawler trains AI; a search engine's and an AI search product's crawler feed search
 * (vocab-08 section 4.2: results that point back to the asset). Other kinds are no category.
 */
const CATEGORY_OF_PURPOSE: Record<string, UsageCategory> = {
  'ai-training': 'train-ai',
  search: 'search',
  'ai-search': 'search',
};

/** The category of use a family's purpose is, if it is one the vocabulary names. */
export const categoryOfPurpose = (purpose: string | undefined): UsageCategory | undefined =>
  purpose === undefined ? undefined : CATEGORY_OF_PURPOSE[purpose];

/** Whether a request from a family of `purpose` on content of preference `p` goes against it (the category is `n`). */
export function breaksPreference(purpose: string | undefined, p: UsagePreference): boolean {
  const category = categoryOfPurpose(purpose);
  return category !== undefined && p[category] === 'n';
}

/** The rules of content/crawl-policy.yaml (its seed and `usage` list), the default first. */
export function usageRulesOf(policy: {
  crawl_policy: 'allow' | 'deny';
  training: 'allowed' | 'disallowed';
  usage?: { path: string; 'train-ai'?: UsageLabel | undefined; search?: UsageLabel | undefined }[];
}): UsageRule[] {
  return usageRules(
    policy,
    (policy.usage ?? []).map(({ path, ...labels }) => ({
      path,
      preference: Object.fromEntries(
        USAGE_CATEGORIES.filter((c) => labels[c] !== undefined).map((c) => [c, labels[c]]),
      ) as UsagePreference,
    })),
  );
}

/**
 * breaksPreference(purpose, preferenceOf(path, rules)), made once for a set of rules and cheap per
 * request: rules tried longest first, and a purpose whose category no rule refuses is answered at once.
 */
export function createPreferenceJudge(
  rules: readonly UsageRule[],
): (purpose: string | undefined, path: string) => boolean {
  const longestFirst = [...rules].sort((a, b) => b.path.length - a.path.length);
  const refused = new Set(USAGE_CATEGORIES.filter((c) => rules.some((r) => r.preference[c] === 'n')));
  return (purpose, path) => {
    const category = categoryOfPurpose(purpose);
    if (category === undefined || !refused.has(category)) return false;
    for (const r of longestFirst) {
      const label = r.preference[category];
      if (label !== undefined && path.startsWith(r.path)) return label === 'n';
    }
    return false;
  };
}
