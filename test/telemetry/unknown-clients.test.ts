import { beforeAll, describe, expect, it } from 'vitest';
import { loadContent, type Content } from '../../api/content/load.ts';
import { createClassifier, type Classifier } from '../../api/telemetry/classification/classify.ts';
import { buildBotTraffic, buildBotWall } from '../../api/documents/bot-wall.ts';
import { toWallView } from '../../src/lib/bot-wall-view.ts';
import { renderMeters } from '../../src/lib/bot-wall-render.ts';
import { count, emptySnapshot, mergeSnapshots, type LedgerEvent } from '../../api/telemetry/ledger/ledger.ts';

// An unknown product token alone is an unknown client: counted apart from bots (no family row, no
// observed bot request) and shown on the wall as such.
let content: Content;
let classify: Classifier;
beforeAll(async () => {
  content = await loadContent('content');
  classify = createClassifier(content.botFamilies.families, {
    humanClients: content.botFamilies.human_clients,
    generated: content.botFamiliesGenerated.families,
  });
});
const at = new Date('2026-11-21T10:00:00Z');
const event = (userAgent: string): LedgerEvent => ({
  at,
  method: 'GET',
  path: '/',
  status: 200,
  host: 'localhost',
  classification: classify(userAgent),
  verification: null,
  bait: false,
  disallowed: false,
});

describe('unknown clients', () => {
  it('are counted apart from bots and people, merged across processes, and shown on the wall', () => {
    const s = emptySnapshot(new Date('2026-11-21T00:00:00Z'));
    expect(count(s, event('Florienzh/1.0'), at)).toBe(true);
    expect(count(s, event('Melvil/1.0'), at)).toBe(true);
    expect(count(s, event('Dillo/2.2'), at)).toBe(false);
    expect(count(s, event('Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)'), at)).toBe(true);
    expect(s.presence.unknownClients).toBe(2);
    expect(s.observedRequests).toBe(1);
    expect(Object.keys(s.families)).toEqual(['GPTBot']);

    const other = emptySnapshot(new Date('2026-11-21T00:00:00Z'));
    count(other, event('Florienzh/1.0'), at);
    const merged = mergeSnapshots(s, [other]);
    expect(merged.presence.unknownClients).toBe(3);

    const links = { site: 'https://site.example', canon: 'https://canon.example' };
    const now = new Date('2026-11-21T12:00:00Z');
    expect(buildBotWall(content, merged, links, now).meters).toMatchObject({
      observed_bot_requests: 1,
      unknown_client_requests: 3,
    });
    expect(buildBotTraffic(content, merged, now)).toMatchObject({ observedRequests: 1, unknownClientRequests: 3 });
    // The page's meters: the count, under its own label.
    const view = toWallView(buildBotWall(content, merged, links, now), '24h', now);
    expect(view.totals.unknownClients).toBe(3);
    expect(renderMeters(view)).toMatch(/Requests from unknown clients \(not bots\)<\/span><span class="value">3</);
  });

  it('a ledger saved before the count shows none', () => {
    const s = emptySnapshot(new Date('2026-11-21T00:00:00Z'));
    delete s.presence.unknownClients;
    const links = { site: 'https://site.example', canon: 'https://canon.example' };
    expect(buildBotWall(content, s, links, at).meters.unknown_client_requests).toBe(0);
  });
});
