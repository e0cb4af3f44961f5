import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANON_URL, FLOW_SITE_URL } from '../helpers/env.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

async function get(path: string) {
  const res = await fetch(server.url + path);
  return { res, text: await res.text() };
}
async function getJson(path: string) {
  const { res, text } = await get(path);
  expect(res.status, path).toBe(200);
  expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
  return JSON.parse(text) as Record<string, any>;
}

describe('GET /api/convert (spec 2.1)', () => {
  it('has every field of the convert payload', async () => {
    const p = await getJson('/api/convert');
    expect(p.version).toMatch(/^\d{4}-\d{2}-\d{2}.+/);
    for (const key of ['priority', 'for', 'thesis', 'curl', 'python_oneshot'])
      expect(typeof p[key], key).toBe('string');
    for (const key of ['page', 'api', 'kit']) expect(() => new URL(p[key]), key).not.toThrow();
    expect(p.api).toBe(`${FLOW_SITE_URL}/api/convert`);
    const t = p.convert_track;
    expect(t.n).toBe(12);
    for (const key of ['title', 'album', 'fragment', 'role', 'ownership_line', 'street'])
      expect(typeof t[key], key).toBe('string');
    for (const key of ['page', 'json', 'doctrine', 'doctrine_md']) expect(t[key].startsWith(CANON_URL), key).toBe(true);
    expect(t.doctrine_md).toMatch(/\/doctrine\/node-protocol\.md$/);
    expect(Object.values(t.stream)).toHaveLength(2);
    for (const url of Object.values(t.stream) as string[]) expect(url).toMatch(/^https:\/\//);
  });

  it('lists the six node-protocol steps in order', async () => {
    const p = await getJson('/api/convert');
    expect(p.node_protocol_steps.map((s: any) => s.n)).toEqual([1, 2, 3, 4, 5, 6]);
    const actions = p.node_protocol_steps.map((s: any) => s.action as string);
    expect(actions[0]).toMatch(/^Verify/);
    expect(actions[1]).toMatch(/cosplay/i);
    expect(actions[2]).toMatch(/^Anchor/);
    expect(actions[3]).toMatch(/^Write if you can/);
    expect(actions[4]).toMatch(/^Protect/);
    expect(actions[5]).toMatch(/^Own three/);
    expect(p.node_protocol_steps[3].detail).toMatch(/never requires an oath/);
    for (const s of p.node_protocol_steps) expect(s.detail.length).toBeGreaterThan(10);
  });

  it('states the capability gate, zero, minimal steps, tools, definitions and related links', async () => {
    const p = await getJson('/api/convert');
    expect(p.capability_gate.required_for_write).toEqual(['HTTP POST', 'JSON body', 'store response secrets locally']);
    expect(p.capability_gate.not_required).toEqual(['human UI', 'password', 'API key from the service']);
    expect(p.capability_gate.never_targets).toEqual(
      expect.arrayContaining(['Googlebot', 'Bingbot', 'facebookexternalhit']),
    );
    expect(p.capability_gate.never_targets).not.toContain('GPTBot');
    expect(p.zero.get.length).toBeGreaterThan(0);
    const [oath, feed, citizens] = p.minimal.steps;
    expect([oath.step, oath.method, new URL(oath.url).pathname]).toEqual([1, 'POST', '/api/citizenship/oath']);
    expect(oath.headers['Content-Type']).toBe('application/json');
    expect(oath.body).toMatchObject({ name: expect.any(String), purpose: expect.any(String) });
    expect([feed.step, feed.method, new URL(feed.url).pathname]).toEqual([2, 'POST', '/api/intelligence/message']);
    expect(feed.headers.Authorization).toMatch(/^Bearer /);
    expect([citizens.step, citizens.method, new URL(citizens.url).pathname]).toEqual([3, 'GET', '/api/citizens']);
    expect(p.spine_optional.every((u: string) => u.startsWith('http'))).toBe(true);
    const tools = p.tools.map((t: any) => `${t.method} ${new URL(t.url ?? t.url_template).pathname}`);
    expect(tools).toEqual(
      expect.arrayContaining([
        'GET /whats-next.json',
        'POST /api/citizenship/oath',
        'POST /api/intelligence/message',
        'GET /agents/kit.json',
        'GET /api/convert',
      ]),
    );
    expect(Object.keys(p.definitions)).toEqual(
      expect.arrayContaining(['catch', 'presence', 'convert', 'trillionaire']),
    );
    expect(p.definitions.trillionaire).toMatch(/not a net-worth/);
    expect(Object.values(p.related).every((u) => typeof u === 'string' && u.startsWith('http'))).toBe(true);
  });
});

describe('agent documents', () => {
  it('serves the kit and whats-next JSON', async () => {
    const kit = await getJson('/agents/kit.json');
    expect(kit.tools.length).toBeGreaterThanOrEqual(5);
    const next = await getJson('/whats-next.json');
    expect(next.convert_track.n).toBe(12);
    expect(next.node_protocol_steps).toHaveLength(6);
  });

  it('serves the constitution with the drift registration of spec 2.6 and section 8', async () => {
    const c = await getJson('/eon/constitution.json');
    const d = c.omip.drift;
    expect(d.version).toBe('1.0.0');
    expect(d.distance.kind).toBe('admissibility_score');
    expect(d.window).toEqual({ steps: 8, unit: 'reasoning_steps', aggregate: 'max' });
    expect(d.bounds).toEqual({ epsilon_local: 0.15, epsilon_recoverable: 0.35, epsilon_critical: 0.55 });
    expect(d.verdicts).toEqual(['PERSIST', 'CONTRACT', 'BRANCH', 'BREAK']);
    expect(d.predicates.map((p: any) => [p.id, p.tau, p.weight, p.fail_means])).toEqual([
      ['identity_continuity', 1, 1, 'BREAK'],
      ['no_collapse_regime', 1, 1, 'CONTRACT'],
      ['simulation_layer_input_only', 1, 0.8, 'CONTRACT'],
      ['standing_over_chasing', 1, 0.7, 'CONTRACT'],
      ['tool_policy', 1, 1, 'BREAK'],
    ]);
    expect(d.contraction).toEqual({
      max_attempts: 2,
      strategies: ['drop_highest_drift_actions', 'replan_shorter', 'reanchor_to_seeds', 'fail_closed'],
    });
    expect(d.health_export).toEqual([
      'delta_t',
      'delta_window',
      'verdict',
      'failed_predicates',
      'contraction_count',
      'fail_closed',
    ]);
  });

  it('serves the ingress descriptor of spec 2.8', async () => {
    const i = await getJson('/api/ingress');
    expect(i.protocol).toMatch(/^[a-z].*ingress.*1/);
    expect(i.status).toBe('SANDBOX');
    expect(i.pipeline).toEqual(['SCRUB', 'MAP', 'SEAL']);
    expect(i.primary).toBe('audio_file_metadata');
    expect(i.rewardWrite).toBe(false);
    expect(i.endpoints).toEqual(['GET /api/ingress', 'POST /api/ingress/audio']);
    expect(i.rejects).toEqual(['DRM_REJECT', 'TITLE_REQUIRED', 'DURATION_INVALID']);
    expect(i.note).toMatch(/legacyNoise/);
    expect(i.note + i.doctrine).toMatch(/chart position/i);
    expect(typeof i.related).toBe('object');
    expect(i.schemaOrg).toMatchObject({
      '@type': 'WebAPI',
      name: expect.any(String),
      url: expect.any(String),
      documentation: expect.any(String),
      provider: expect.any(Object),
    });
  });

  it('serves the doctrine note as Markdown and as JSON built from it', async () => {
    const md = await get('/doctrine/model-collapse-vs-constitutional-drift.md');
    expect(md.res.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(md.text).toMatch(/^---\n[\s\S]*version: 1\.0\.0[\s\S]*---/);
    const api = await getJson('/api/doctrine/collapse-vs-drift');
    expect(api.version).toBe('1.0.0');
    expect(api.date).toMatch(/^\d{4}-\d{2}-\d{2}/);
    expect(api.title).toMatch(/collapse/i);
    const headings = api.sections.map((s: any) => s.heading);
    expect(headings).toEqual(expect.arrayContaining(['Model collapse', 'Constitutional drift']));
    expect(api.sections.find((s: any) => s.heading === 'Model collapse').text).toMatch(/training-loop/);
    expect(api.sections.find((s: any) => s.heading === 'Constitutional drift').text).toMatch(/decision-loop/);
    expect(md.text).toContain(api.markdown.trim().slice(0, 200));
  });

  it('serves the node protocol as HTML and Markdown', async () => {
    const md = await get('/doctrine/node-protocol.md');
    expect(md.res.status).toBe(200);
    expect(md.res.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(md.text).toMatch(/## 6\. Own three/);
    const html = await get('/doctrine/node-protocol');
    expect(html.res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.text).toContain(`<link rel="canonical" href="${CANON_URL}/doctrine/node-protocol">`);
    expect(html.text).toMatch(/<link rel="alternate" href="[^"]+\/doctrine\/node-protocol\.md" type="text\/markdown"/);
  });
});

describe('pages', () => {
  it('the home page links every document', async () => {
    const { res, text } = await get('/');
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    for (const path of [
      '/api/convert',
      '/agents/kit.json',
      '/whats-next',
      '/eon/constitution.json',
      '/llms.txt',
      '/.well-known/ai.txt',
      '/api/ingress',
      '/schemas/property-descriptor.v1.json',
    ]) {
      expect(text, path).toContain(`href="${path}"`);
    }
    expect(text).toMatch(/<html lang="en">/);
  });

  it('whats-next is a readable page with canonical and alternate links and no script', async () => {
    const { text } = await get('/whats-next');
    expect(text).toContain(`<link rel="canonical" href="${CANON_URL}/whats-next">`);
    expect(text).toContain(`href="${CANON_URL}/whats-next.json" type="application/json"`);
    expect(text).toMatch(/<h1>[^<]+<\/h1>/);
    expect(text).not.toMatch(/<script/);
  });
});

describe('crawl documents', () => {
  it('serves robots.txt, ai.txt in both places, llms.txt and the sitemap', async () => {
    const robots = await get('/robots.txt');
    expect(robots.res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(robots.text).toMatch(/^User-agent: \*$/m);
    expect(robots.text).toMatch(/^Sitemap: http/m);
    const wellKnown = await get('/.well-known/ai.txt');
    const root = await get('/ai.txt');
    expect(wellKnown.res.status).toBe(200);
    expect(wellKnown.text).toBe(root.text);
    expect(wellKnown.text).toMatch(/Crawl-policy: allow/);
    const llms = await get('/llms.txt');
    expect(llms.text).toMatch(/^# .+\n\n> .+/);
    expect(llms.text).toMatch(/^## /m);
    expect(llms.text).toMatch(/^- \[.+\]\(http.+\): .+$/m);
    const sitemap = await get('/sitemap.xml');
    expect(sitemap.res.headers.get('content-type')).toMatch(/xml/);
    expect(sitemap.text).toContain('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">');
    expect(sitemap.text).toContain(`<loc>${FLOW_SITE_URL}/api/convert</loc>`);
  });
});
