import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createRobotsJudge,
  decidingRule,
  disallowedBy,
  matches,
  normalise,
  parseRobots,
  readRobotsDir,
  ROBOTS_HOSTS,
  ROBOTS_LIMITS,
  robotsVersion,
  selectRules,
} from '../../api/telemetry/robots/robots.ts';

/** The rule text deciding `path` for a crawler of `tokens`, or "allowed". */
const verdict = (text: string, tokens: string[], path: string) => {
  const { rules } = selectRules(parseRobots(text), tokens);
  const r = decidingRule(rules, path);
  return r === null ? 'allowed' : r.allow ? `allowed by ${r.text}` : r.text;
};

describe('RFC 9309 matching', () => {
  it('matches by prefix, with * for any run of characters and a final $ for the end', () => {
    expect(matches('/fish', '/fish.html')).toBe(true);
    expect(matches('/fish', '/Fish')).toBe(false);
    expect(matches('/fish*.php', '/fish/salmon.php?id=1')).toBe(true);
    expect(matches('/fish*.php', '/fish.PHP')).toBe(false);
    expect(matches('/*.php$', '/a/b.php')).toBe(true);
    expect(matches('/*.php$', '/a/b.php?x=1')).toBe(false);
    expect(matches('/*.php$', '/a/b.php5')).toBe(false);
    expect(matches('/exact$', '/exact')).toBe(true);
    expect(matches('/exact$', '/exact/')).toBe(false);
    // `$` not at the end is a literal.
    expect(matches('/a$b', '/a$b/c')).toBe(true);
    expect(matches('*', '/anything')).toBe(true);
    expect(matches('/a*b*c$', '/a-c-b-c')).toBe(true);
    expect(matches('/a*b*c$', '/a-c-b-c-d')).toBe(false);
  });

  it('cannot be made to backtrack: a pattern of many * against a long path stays fast', () => {
    const pattern = `/${'a*'.repeat(200)}b$`;
    const path = `/${'a'.repeat(ROBOTS_LIMITS.bytes / 64)}`;
    const started = performance.now();
    expect(matches(pattern, path)).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('compares percent-encoded forms (RFC 9309 2.2.2): non-ASCII encoded, unreserved decoded, hex upper case', () => {
    expect(normalise('/foo/bar/ツ')).toBe('/foo/bar/%E3%83%84');
    expect(normalise('/foo/bar/%e3%83%84')).toBe('/foo/bar/%E3%83%84');
    expect(normalise('/foo/bar/%62%61%7A')).toBe('/foo/bar/baz');
    expect(normalise('/a%2Fb')).toBe('/a%2Fb');
    expect(normalise('/😀')).toBe('/%F0%9F%98%80');
    const file = 'User-agent: *\nDisallow: /foo/bar/ツ\nDisallow: /baz/%62\nDisallow: /q%3fx\n';
    expect(verdict(file, ['x'], '/foo/bar/%E3%83%84')).toBe('Disallow: /foo/bar/ツ');
    expect(verdict(file, ['x'], '/baz/b')).toBe('Disallow: /baz/%62');
    expect(verdict(file, ['x'], '/baz/%62ad')).toBe('Disallow: /baz/%62');
    // A reserved character stays what it is: an encoded "?" is not a query.
    expect(verdict(file, ['x'], '/q%3Fx')).toBe('Disallow: /q%3fx');
    expect(verdict(file, ['x'], '/q?x')).toBe('allowed');
  });

  it('takes the longest matching rule, Allow on a tie, and ignores an empty Disallow', () => {
    const file = [
      'User-agent: *',
      'Disallow: /shop',
      'Allow: /shop/open',
      'Disallow: /shop/open/closed',
      'Allow: /tie',
      'Disallow: /tie',
      'Disallow: /star*',
      'Allow: /star/',
      'Disallow:',
    ].join('\n');
    expect(verdict(file, ['x'], '/shop/cart')).toBe('Disallow: /shop');
    expect(verdict(file, ['x'], '/shop/open/now')).toBe('allowed by Allow: /shop/open');
    expect(verdict(file, ['x'], '/shop/open/closed/1')).toBe('Disallow: /shop/open/closed');
    expect(verdict(file, ['x'], '/tie/1')).toBe('allowed by Allow: /tie');
    // `/star*` and `/star/` are as long: Allow wins.
    expect(verdict(file, ['x'], '/star/a')).toBe('allowed by Allow: /star/');
    expect(verdict(file, ['x'], '/stars')).toBe('Disallow: /star*');
    expect(verdict(file, ['x'], '/elsewhere')).toBe('allowed');
    expect(verdict('User-agent: *\nDisallow:\n', ['x'], '/any')).toBe('allowed');
  });

  it('always allows /robots.txt itself', () => {
    expect(verdict('User-agent: *\nDisallow: /\n', ['x'], '/robots.txt')).toBe('allowed');
    expect(verdict('User-agent: *\nDisallow: /\n', ['x'], '/robots.txt.bak')).toBe('Disallow: /');
  });
});

describe('RFC 9309 groups', () => {
  const file = [
    '# comment line',
    'User-agent: GPTBot',
    'user-agent: CCBot/2.0   # a version after the token is ignored',
    'Disallow: /gpt-and-cc/',
    '',
    'Sitemap: https://example.test/sitemap.xml',
    'User-agent: *',
    'Disallow: /everyone/',
    '',
    'User-agent: gptbot',
    'Disallow: /gpt-only/',
    '',
    'User-agent: Googlebot',
    'Allow: /',
  ].join('\r\n');

  it('selects the group naming the crawler, case-insensitive, with all its groups combined', () => {
    const s = selectRules(parseRobots(file), ['GPTBot']);
    expect(s.agent).toBe('gptbot');
    expect(s.rules.map((r) => r.text)).toEqual(['Disallow: /gpt-and-cc/', 'Disallow: /gpt-only/']);
    // The group for GPTBot replaces `*`: its rules are not added.
    expect(verdict(file, ['GPTBot'], '/everyone/x')).toBe('allowed');
    expect(verdict(file, ['GPTBot'], '/gpt-only/x')).toBe('Disallow: /gpt-only/');
    expect(verdict(file, ['ccbot'], '/gpt-and-cc/x')).toBe('Disallow: /gpt-and-cc/');
    expect(verdict(file, ['ccbot'], '/gpt-only/x')).toBe('allowed');
  });

  it('falls back to * for a crawler no group names, and to nothing without a * group', () => {
    expect(verdict(file, ['ClaudeBot'], '/everyone/x')).toBe('Disallow: /everyone/');
    expect(selectRules(parseRobots(file), ['ClaudeBot']).agent).toBe('*');
    expect(verdict('User-agent: GPTBot\nDisallow: /\n', ['ClaudeBot'], '/x')).toBe('allowed');
    expect(selectRules(parseRobots('User-agent: GPTBot\nDisallow: /\n'), ['ClaudeBot']).agent).toBeNull();
  });

  it("takes the first of a family's tokens that a group names", () => {
    expect(selectRules(parseRobots(file), ['Googlebot-Image', 'Googlebot']).agent).toBe('googlebot');
  });

  it('names the rule with its line number, as written, and the group', () => {
    const broke = disallowedBy(parseRobots(file), ['GPTBot'], '/gpt-only/page');
    expect(broke).toMatchObject({ line: 11, text: 'Disallow: /gpt-only/', agent: 'gptbot', allow: false });
  });

  it('ignores rules before any user-agent line, and a user-agent after rules starts a new group', () => {
    const f = parseRobots('Disallow: /orphan\nUser-agent: a\nDisallow: /a\nUser-agent: b\nDisallow: /b\n');
    expect(f.groups.map((g) => g.agents)).toEqual([['a'], ['b']]);
    expect(verdict('Disallow: /orphan\nUser-agent: *\nDisallow: /x\n', ['z'], '/orphan')).toBe('allowed');
  });

  it('reads at most ROBOTS_LIMITS.bytes and ROBOTS_LIMITS.rulesPerFile rules', () => {
    const many = `User-agent: *\n${Array.from({ length: ROBOTS_LIMITS.rulesPerFile + 50 }, (_, i) => `Disallow: /r${i}$`).join('\n')}\n`;
    const parsed = parseRobots(many);
    expect(parsed.groups[0]!.rules).toHaveLength(ROBOTS_LIMITS.rulesPerFile);
    const huge = `User-agent: *\n${'#'.repeat(ROBOTS_LIMITS.bytes)}\nDisallow: /late\n`;
    expect(verdict(huge, ['x'], '/late')).toBe('allowed');
  });
});

describe('the judge', () => {
  const own = 'User-agent: *\nDisallow: /trap/\n';
  const other = 'User-agent: GPTBot\nDisallow: /\n';
  const judge = createRobotsJudge(own, new Map([['Blog.Example', other]]), ['site.example']);

  it("judges a live request by the service's own file, and names its version", () => {
    const v = judge.judge(null, '/trap/x', ['GPTBot']);
    expect(v).toEqual({
      host: 'site',
      version: robotsVersion(own),
      broke: { line: 2, text: 'Disallow: /trap/', agent: '*' },
    });
    expect(judge.judge(null, '/docs', ['GPTBot'])!.broke).toBeNull();
  });

  it("judges an ingested line by its host's file; its own hosts and no host by the service's; an unknown host not at all", () => {
    expect(judge.judge('blog.example', '/post', ['GPTBot'])).toMatchObject({
      host: 'blog.example',
      version: robotsVersion(other),
      broke: { line: 2, agent: 'gptbot' },
    });
    expect(judge.judge('blog.example', '/post', ['ClaudeBot'])!.broke).toBeNull();
    expect(judge.judge('site.example', '/trap/', ['GPTBot'])!.host).toBe('site');
    expect(judge.judge('', '/trap/', ['GPTBot'])!.broke).not.toBeNull();
    expect(judge.judge('stranger.example', '/trap/', ['GPTBot'])).toBeNull();
    expect(judge.versions()).toEqual([
      { host: 'site', version: robotsVersion(own) },
      { host: 'blog.example', version: robotsVersion(other) },
    ]);
  });

  it('reads a folder of <host>.txt files, at most ROBOTS_HOSTS of them and ROBOTS_LIMITS.bytes of each', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'robots-'));
    try {
      await writeFile(join(dir, 'A.Example.txt'), other);
      await writeFile(join(dir, 'notes.md'), 'not a robots.txt');
      await writeFile(
        join(dir, 'big.example.txt'),
        `User-agent: *\n${'#'.repeat(ROBOTS_LIMITS.bytes)}\nDisallow: /late\n`,
      );
      for (let i = 0; i < ROBOTS_HOSTS; i++)
        await writeFile(join(dir, `z${String(i).padStart(3, '0')}.example.txt`), own);
      const files = await readRobotsDir(dir);
      expect(files.size).toBe(ROBOTS_HOSTS);
      expect(files.get('a.example')).toBe(other);
      expect(files.has('notes.md')).toBe(false);
      expect(files.get('big.example')!.length).toBe(ROBOTS_LIMITS.bytes);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
