import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_FILE, generatedTableText } from '../../api/cli/refresh-bot-families.ts';
import {
  bareName,
  expandPattern,
  generatedFamilies,
  GLUED_NAME_VERSION,
  TRAILING,
} from '../../api/telemetry/classification/bot-lists.ts';
import { productTokens } from '../../api/telemetry/classification/tokens.ts';
import { fixtureAgentsAsReceived } from '../helpers/fixture-agents.ts';

describe('the generated bot table', () => {
  it('is exactly what npm run refresh-bot-families makes from the installed lists', async () => {
    const shipped = readFileSync(new URL(`../../content/${GENERATED_FILE}`, import.meta.url), 'utf8');
    expect(
      shipped === (await generatedTableText('content')),
      `content/${GENERATED_FILE} differs: run npm run refresh-bot-families`,
    ).toBe(true);
  });

  it("takes no token our curated table or our people's clients hold, and names the long tail", async () => {
    const table = JSON.parse(readFileSync(new URL(`../../content/${GENERATED_FILE}`, import.meta.url), 'utf8')) as {
      families: { family: string; tokens: string[]; source: string }[];
    };
    const tokens = new Set(table.families.flatMap((f) => f.tokens.map((t) => t.toLowerCase())));
    for (const curated of ['gptbot', 'googlebot', 'bingbot', 'kube-probe', 'spotify', 'okhttp'])
      expect(tokens.has(curated), curated).toBe(false);
    expect(table.families.filter((f) => f.source === 'device-detector').length).toBeGreaterThan(800);
    expect(table.families.filter((f) => f.source === 'crawler-user-agents').length).toBeGreaterThan(500);
  });
});

describe('patterns read as the names they match', () => {
  it.each([
    ['(360Spider(?:-Image|-Video)?)', ['360Spider-Image', '360Spider-Video', '360Spider']],
    ['Y!J-(ASR|BR[JW])', ['Y!J-ASR', 'Y!J-BRJ', 'Y!J-BRW']],
    ['Octopus [\\d.]+', ['Octopus']],
    ['.*masscan', ['masscan']],
    ['(?<!HTC)[ _]Butterfly/', ['Butterfly/', '_Butterfly/']],
    // A wildcard before more required text leaves no name ("Baidu" alone is not what this matches).
    ['Baidu.*spider|baidu Transcoder', ['baidu Transcoder']],
    ['Pinterest(?:bot)?/.*www\\.pinterest\\.com', []],
  ])('%s', (pattern, names) => {
    expect(expandPattern(pattern)).toEqual(names);
  });

  it('gives up on patterns with too many readings or none', () => {
    expect(expandPattern('[A-z0-9]*-Lighthouse')).toEqual(['-Lighthouse']);
    expect(expandPattern('(a|b)(c|d)(e|f)(g|h)(i|j)(k|l)(m|n)')).toBeNull();
    expect(expandPattern('(unclosed')).toBeNull();
  });
});

describe("crawler-user-agents' entries read as the names their examples give", () => {
  const tokensOf = (pattern: string, instance: string) =>
    generatedFamilies({ families: [], human_clients: {} }, [], [{ pattern, instances: [instance] }]).map(
      (f) => f.tokens,
    );

  it('takes every word the match covers, one space or an apostrophe apart, not the first alone', () => {
    expect(tokensOf('Dow Jones Searchbot', 'Dow Jones Searchbot')).toEqual([['Dow Jones Searchbot']]);
    expect(
      tokensOf(
        "Let's Encrypt",
        "Mozilla/5.0 (compatible; Let's Encrypt validation server; +https://www.letsencrypt.org)",
      ),
    ).toEqual([["Let's Encrypt"]]);
  });

  it('ends the name at a version, a comment or another delimiter, and after four words', () => {
    expect(tokensOf('BlogTraffic/\\d\\.\\d+ Feed-Fetcher', 'BlogTraffic/1.4 Feed-Fetcher')).toEqual([['BlogTraffic']]);
    expect(tokensOf('Owler \\(ows', 'Owler (ows.eu/owler)')).toEqual([['Owler']]);
    expect(tokensOf('Acme .*Crawler', 'Acme Super Duper Mega Crawler')).toEqual([['Acme Super Duper Mega']]);
    expect(tokensOf('ExampleBot', 'Mozilla/5.0 (compatible; ExampleBot/1.0)')).toEqual([['ExampleBot']]);
  });

  it('joins a bot device-detector names alike to that family, and names a clash by its operator, never by a number', () => {
    const disqus = generatedFamilies(
      { families: [], human_clients: {} },
      [{ regex: 'DisqusAdstxtCrawler', name: 'Disqus', producer: { name: 'Disqus, Inc.' } }],
      [{ pattern: 'Disqus', instances: ['Disqus/1.0'] }],
    );
    expect(disqus.map((f) => [f.family, f.operator, f.tokens])).toEqual([
      ['Disqus', 'Disqus, Inc.', ['DisqusAdstxtCrawler', 'Disqus']],
    ]);
    // Whatever version the example gives: one family, named without it.
    const yooz = generatedFamilies(
      { families: [], human_clients: {} },
      [{ regex: 'yoozBot', name: 'yoozBot', producer: { name: 'yooz' } }],
      [
        { pattern: 'yoozBot-2\\.2', instances: ['Mozilla/5.0 (compatible; yoozBot-2.2; http://yooz.example)'] },
        { pattern: 'binlar', instances: ['binlar_2.6.3 ops@example.mail'] },
      ],
    );
    expect(yooz.map((f) => [f.family, f.tokens])).toEqual([
      ['yoozBot', ['yoozBot', 'yoozBot-2.2']],
      ['binlar', ['binlar_2.6.3']],
    ]);
    const curated = {
      families: [
        { family: 'httpx', operator: '(tool)', tokens: ['python-httpx'], kind: 'tool', class: 'Bot', verify: 'none' },
      ],
      human_clients: {},
    } as unknown as Parameters<typeof generatedFamilies>[0];
    const clash = generatedFamilies(
      curated,
      [{ regex: 'httpx', name: 'httpx', producer: { name: 'ProjectDiscovery, Inc.' } }],
      [],
    );
    expect(clash.map((f) => f.family)).toEqual(['httpx (ProjectDiscovery, Inc.)']);
    const table = JSON.parse(readFileSync(new URL(`../../content/${GENERATED_FILE}`, import.meta.url), 'utf8')) as {
      families: { family: string }[];
    };
    expect(table.families.filter((f) => / \(\d+\)$/.test(f.family))).toEqual([]);
  });

  it('gives an entry whose own name a row holds to that row, not to a family named after its examples', () => {
    // A generated row takes the examples' other names.
    const zorp = generatedFamilies(
      { families: [], human_clients: {} },
      [{ regex: 'zorpbot', name: 'Zorp bot', producer: { name: 'Zorp' } }],
      [{ pattern: 'zorpbot', instances: ['zorpbot-image (+http://zorp.example/bot.html)', 'zorpbot-page'] }],
    );
    expect(zorp.map((f) => [f.family, f.tokens])).toEqual([['Zorp bot', ['zorpbot', 'zorpbot-image', 'zorpbot-page']]]);
    // A curated row needs no token the classifier reads by its head; an address the pattern matched
    // in names its own bot still ("quuxlib/1.0 (+http://zorp.example/zorpbot.htm)").
    const curated = {
      families: [
        { family: 'Zorpbot', operator: 'Zorp', tokens: ['zorpbot'], kind: 'search', class: 'Crawler', verify: 'none' },
      ],
      human_clients: {},
    } as unknown as Parameters<typeof generatedFamilies>[0];
    const examples = [
      'zorpbot-media/1.1 (+http://zorp.example/zorpbot.htm)',
      'quuxlib/1.0 (+http://zorp.example/zorpbot.htm)',
    ];
    expect(
      generatedFamilies(curated, [], [{ pattern: 'zorpbot', instances: examples }]).map((f) => [f.family, f.tokens]),
    ).toEqual([['quuxlib', ['quuxlib']]]);
  });

  it('leaves in the shipped table no first word of a longer name as a token of its own', () => {
    const table = JSON.parse(readFileSync(new URL(`../../content/${GENERATED_FILE}`, import.meta.url), 'utf8')) as {
      families: { tokens: string[] }[];
    };
    const tokens = new Set(table.families.flatMap((f) => f.tokens));
    for (const word of ['Let', 'Dow', 'New', 'Bad', 'Server', 'XML']) expect(tokens.has(word), word).toBe(false);
    for (const name of ["Let's Encrypt", 'Dow Jones Searchbot', 'New York Times Newsgathering'])
      expect(tokens.has(name), name).toBe(true);
  });
});

describe('a name without its glued version', () => {
  it("is the patterns' answer, though most names ending in a letter never ask them", () => {
    const byPatterns = (name: string) => {
      const head = name.replace(GLUED_NAME_VERSION, '').replace(TRAILING, '');
      return head.length >= 3 ? head : name;
    };
    const tokens = [...new Set(fixtureAgentsAsReceived.flatMap((ua) => productTokens(ua).original))];
    const names = tokens.flatMap((t) => [
      t,
      `${t}-2.6.1`,
      `${t} v.`,
      `${t}v3.0-RC1`,
      `${t}-beta`,
      `${t}:`,
      `${t} 1.0 pre`,
    ]);
    expect(names.filter((name) => bareName(name) !== byPatterns(name))).toEqual([]);
    expect(['grub-client-2.6.1', 'SSL-Crawler:', 'DirBuster-1.0-RC1', 'Seeker v.1', 'XyzBot'].map(bareName)).toEqual([
      'grub-client',
      'SSL-Crawler',
      'DirBuster',
      'Seeker',
      'XyzBot',
    ]);
  });
});
