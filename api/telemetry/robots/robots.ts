import { hash } from 'node:crypto';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { remember } from '../../memo.ts';

/**
 * robots.txt as RFC 9309 reads it, to judge a crawler's request against the rules the file gives
 * *that* crawler. Pure: parsing, group selection and matching; reading files is the caller's.
 *
 * Written here rather than taken from npm: robots-parser (the maintained one) compares reserved
 * characters unencoded on one side and encoded on the other, so RFC 9309 2.2.2's own example
 * (`/foo/bar?baz=https://foo.bar` against `…https%3A%2F%2Ffoo.bar`) does not match, and it returns
 * a line number but not the rule as written (docs/decisions.md, "robots.txt judged per crawler").
 */

/** One Allow or Disallow line of a group. */
export interface RobotsRule {
  allow: boolean;
  /** The path pattern, normalised (normalise()). */
  pattern: string;
  /** 1-based line number in the file. */
  line: number;
  /** The line as written, comment and surrounding space removed (`Disallow: /private/`). */
  text: string;
  /** The pattern split at `*`, and whether it ends in `$`: made once, matched per request. */
  parts: string[];
  anchored: boolean;
}

interface Group {
  /** Product tokens of the group's user-agent lines, lowercase; `*` for the catch-all. */
  agents: string[];
  rules: RobotsRule[];
}

export interface RobotsFile {
  /** A short id of the file's bytes: the version a verdict names. */
  version: string;
  groups: Group[];
}

/** What a file is read of, at most (RFC 9309 2.5: a parser must read at least 500 KiB). */
export const ROBOTS_LIMITS = { bytes: 512 * 1024, rulesPerFile: 10_000, pathChars: 2048 } as const;

/** The id of a robots.txt version: the first 12 characters of its SHA-256 in base64url. */
export const robotsVersion = (text: string) => hash('sha256', text, 'base64url').slice(0, 12);

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const PLAIN = /^[\x21-\x24\x26-\x7e]*$/;

/**
 * A path or pattern in the one form both are compared in (RFC 9309 2.2.2): octets outside ASCII
 * (and controls and spaces) percent-encoded as UTF-8, hex digits upper case, and a percent-encoded
 * unreserved character decoded. Reserved characters compare as written, encoded or not: `%2F` is
 * not `/` (the path's structure differs). `*` and `$` are left to the caller.
 */
export function normalise(path: string): string {
  // Most paths are printable ASCII without an escape: already in the form.
  if (PLAIN.test(path)) return path;
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const ch = path[i]!;
    if (ch === '%' && /^[0-9A-Fa-f]{2}$/.test(path.slice(i + 1, i + 3))) {
      const code = Number.parseInt(path.slice(i + 1, i + 3), 16);
      const decoded = String.fromCharCode(code);
      out += code < 0x80 && UNRESERVED.test(decoded) ? decoded : `%${path.slice(i + 1, i + 3).toUpperCase()}`;
      i += 2;
      continue;
    }
    const code = ch.charCodeAt(0);
    if (code > 0x20 && code < 0x7f) {
      out += ch;
      continue;
    }
    // A surrogate pair is one code point: encode both halves together.
    const cp = path.codePointAt(i)!;
    const char = String.fromCodePoint(cp);
    if (char.length === 2) i++;
    for (const b of Buffer.from(char, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * Whether a normalised pattern matches a normalised path from its start: `*` is any run of
 * characters, a final `$` anchors the end (elsewhere it is a literal). Linear in the path per
 * segment, no regular expression: a pattern of many `*` cannot make it backtrack.
 */
export function matches(pattern: string, path: string): boolean {
  return matchParts(compile(pattern), path);
}

const compile = (pattern: string) => {
  const anchored = pattern.endsWith('$');
  return { anchored, parts: (anchored ? pattern.slice(0, -1) : pattern).split('*') };
};

function matchParts({ parts, anchored }: { parts: string[]; anchored: boolean }, path: string): boolean {
  const first = parts[0]!;
  if (!path.startsWith(first)) return false;
  if (parts.length === 1) return anchored ? path.length === first.length : true;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = path.indexOf(parts[i]!, at);
    if (found === -1) return false;
    at = found + parts[i]!.length;
  }
  const last = parts[parts.length - 1]!;
  if (!anchored) return path.indexOf(last, at) !== -1;
  return path.length - last.length >= at && path.endsWith(last);
}

/** The product token a user-agent line names: its value up to a `/` version or a space, lowercase. */
const agentToken = (value: string) => value.split(/[/\s]/)[0]!.toLowerCase();

/** Parses a robots.txt (RFC 9309 2.1): groups of user-agent lines and the rules after them. */
export function parseRobots(text: string): RobotsFile {
  const body = text.length > ROBOTS_LIMITS.bytes ? text.slice(0, ROBOTS_LIMITS.bytes) : text;
  const groups: Group[] = [];
  let current: Group | null = null;
  // A user-agent line after rules starts a new group; consecutive ones share one.
  let lastWasAgent = false;
  let rules = 0;
  const lines = body.split(/\r\n|\r|\n/);
  for (let n = 0; n < lines.length; n++) {
    const hashAt = lines[n]!.indexOf('#');
    const line = (hashAt === -1 ? lines[n]! : lines[n]!.slice(0, hashAt)).trim();
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'user-agent') {
      if (!lastWasAgent || current === null) groups.push((current = { agents: [], rules: [] }));
      if (value !== '') current.agents.push(agentToken(value));
      lastWasAgent = true;
      continue;
    }
    if (key !== 'allow' && key !== 'disallow') continue; // sitemap and others belong to no group
    lastWasAgent = false;
    // A rule before any user-agent line belongs to no group; an empty one allows everything (no rule).
    if (current === null || value === '' || rules >= ROBOTS_LIMITS.rulesPerFile) continue;
    rules++;
    const pattern = normalise(value);
    current.rules.push({
      allow: key === 'allow',
      pattern,
      line: n + 1,
      text: `${key === 'allow' ? 'Allow' : 'Disallow'}: ${value}`,
      ...compile(pattern),
    });
  }
  return { version: robotsVersion(text), groups };
}

/** The rules a crawler obeys, and the group's user-agent as the file names it. */
export interface Selection {
  /** The user-agent the group matched (a product token, or `*`); null when no group applies. */
  agent: string | null;
  rules: RobotsRule[];
}

/**
 * The rules for a crawler known by these product tokens (RFC 9309 2.2.1): every group whose
 * user-agent names one of them, case-insensitive and combined, for the first token that any group
 * names; else the `*` groups combined; else none (everything allowed).
 */
export function selectRules(file: RobotsFile, tokens: readonly string[]): Selection {
  for (const token of tokens) {
    const t = token.toLowerCase();
    const named = file.groups.filter((g) => g.agents.includes(t));
    if (named.length > 0) return { agent: t, rules: named.flatMap((g) => g.rules) };
  }
  const any = file.groups.filter((g) => g.agents.includes('*'));
  return any.length > 0 ? { agent: '*', rules: any.flatMap((g) => g.rules) } : { agent: null, rules: [] };
}

/**
 * The rule that decides a path (RFC 9309 2.2.2): the matching rule with the longest pattern; on a
 * tie, Allow. Null when no rule matches (allowed). /robots.txt itself is always allowed.
 */
export function decidingRule(rules: readonly RobotsRule[], path: string): RobotsRule | null {
  const p = normalise(path);
  if (p === '/robots.txt') return null;
  let best: RobotsRule | null = null;
  for (const r of rules) {
    if (!matchParts(r, p)) continue;
    if (
      !best ||
      r.pattern.length > best.pattern.length ||
      (r.pattern.length === best.pattern.length && r.allow && !best.allow)
    )
      best = r;
  }
  return best;
}

/** The Disallow rule a request breaks, or null when the path is allowed to that crawler. */
export function disallowedBy(
  file: RobotsFile,
  tokens: readonly string[],
  path: string,
): (RobotsRule & { agent: string }) | null {
  const { agent, rules } = selectRules(file, tokens);
  const rule = decidingRule(rules, path);
  return rule && !rule.allow ? { ...rule, agent: agent! } : null;
}

/** A verdict on one request: which robots.txt judged it and the Disallow rule it broke, if any. */
export interface RobotsVerdict {
  /** The host whose robots.txt judged it (`site` for the service's own). */
  host: string;
  version: string;
  broke: { line: number; text: string; agent: string } | null;
}

/** Other hosts' robots.txt files read at most (ROBOTS_TXT_DIR). */
export const ROBOTS_HOSTS = 64;

/**
 * Judges requests: the service's own robots.txt for live requests and ingested lines of its own
 * host (or of no host), each other host's file when the operator gave one (ROBOTS_TXT_DIR), else
 * none (the request is not judged). A file is read once; a crawler's rule selection is cached per
 * file and token list, so a request costs one match over that crawler's rules.
 */
export function createRobotsJudge(
  own: string,
  others: ReadonlyMap<string, string> = new Map(),
  ownHosts: readonly string[] = [],
) {
  const site = parseRobots(own);
  const files = new Map<string, RobotsFile>();
  for (const [host, text] of [...others].slice(0, ROBOTS_HOSTS)) files.set(host.toLowerCase(), parseRobots(text));
  const mine = new Set(['', ...ownHosts.map((h) => h.toLowerCase())]);
  /** A selection with its verdicts made once (the ledger only reads them). */
  type Judged = Selection & { allowed: RobotsVerdict; verdictOf: (rule: RobotsRule) => RobotsVerdict };
  const judged = (file: RobotsFile, s: Selection): Judged => {
    const host = file === site ? 'site' : [...files].find(([, f]) => f === file)![0];
    const broken = new Map<RobotsRule, RobotsVerdict>();
    return {
      ...s,
      allowed: { host, version: file.version, broke: null },
      verdictOf: (rule) => {
        let v = broken.get(rule);
        if (!v)
          broken.set(
            rule,
            (v = { host, version: file.version, broke: { line: rule.line, text: rule.text, agent: s.agent! } }),
          );
        return v;
      },
    };
  };
  const selections = new WeakMap<RobotsFile, Map<string, Judged>>();
  const selectionOf = (file: RobotsFile, tokens: readonly string[]): Judged => {
    let byTokens = selections.get(file);
    if (!byTokens) selections.set(file, (byTokens = new Map()));
    const key = tokens.length === 1 ? tokens[0]! : tokens.join('\n');
    // As many as the families the classifier names, unless a flood of unknown names grows it.
    return byTokens.get(key) ?? remember(byTokens, 4096, key, judged(file, selectRules(file, tokens)));
  };
  return {
    /** The versions in force, by host (`site` for the service's own). */
    versions: (): { host: string; version: string }[] => [
      { host: 'site', version: site.version },
      ...[...files].map(([host, f]) => ({ host, version: f.version })),
    ],
    /**
     * The verdict on a request to `path` by a crawler of these tokens: on `host` for an ingested
     * line, or null for a live request (always the service's own file); null when no robots.txt is
     * known for the host.
     */
    judge(host: string | null, path: string, tokens: readonly string[]): RobotsVerdict | null {
      const h = host?.toLowerCase() ?? '';
      const file = host === null ? site : (files.get(h) ?? (mine.has(h) ? site : null));
      // A path longer than any a site links (2,048, the sitemaps' bound on a URL) is not judged:
      // normalising a 14 KB percent-encoded one cost about 1 ms, twenty times a whole request.
      if (!file || path.length > ROBOTS_LIMITS.pathChars) return null;
      const selection = selectionOf(file, tokens);
      const rule = decidingRule(selection.rules, path);
      return rule && !rule.allow ? selection.verdictOf(rule) : selection.allowed;
    },
  };
}
export type RobotsJudge = ReturnType<typeof createRobotsJudge>;

/**
 * Other hosts' robots.txt files from a folder (ROBOTS_TXT_DIR): `<host>.txt`, host lowercase, at
 * most ROBOTS_HOSTS files (by name) and ROBOTS_LIMITS.bytes read of each. Read once at start.
 */
export async function readRobotsDir(dir: string): Promise<Map<string, string>> {
  const names = (await readdir(dir))
    .filter((n) => n.endsWith('.txt') && n.length > 4)
    .sort()
    .slice(0, ROBOTS_HOSTS);
  const out = new Map<string, string>();
  for (const name of names) {
    const file = await open(join(dir, name));
    try {
      const buf = Buffer.alloc(ROBOTS_LIMITS.bytes);
      const { bytesRead } = await file.read(buf, 0, buf.length, 0);
      out.set(name.slice(0, -4).toLowerCase(), buf.subarray(0, bytesRead).toString('utf8'));
    } finally {
      await file.close();
    }
  }
  return out;
}
