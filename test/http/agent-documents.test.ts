import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { estimateTokens } from '../../api/documents/markdown.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(server.url + path, { headers });

/** Every HTML page and its Markdown twin; /bot-wall is live (its Markdown is prebuilt). */
const PAGES: [page: string, twin: string, says: RegExp][] = [
  ['/', '/index.md', /^# .+\n[\s\S]*## Documents/],
  ['/whats-next', '/whats-next.md', /## The node protocol\n\n1\. \*\*Verify/],
  ['/doctrine/node-protocol', '/doctrine/node-protocol.md', /^---\ntitle: /],
  ['/doctrine/model-collapse-vs-constitutional-drift', '/doctrine/model-collapse-vs-constitutional-drift.md', /^---\n/],
  ['/docs/api', '/docs/api.md', /### POST \/api\/citizenship\/oath/],
  ['/bot-wall', '/bot-wall.md', /\[The wall as JSON\]\(.+\/bot-wall\.json\)/],
];
const LIVE = new Set(['/bot-wall']);

/** The Link header's targets by relation, e.g. { alternate: ['</x.md>; type="text/markdown"'] }. */
function links(header: string | null): { href: string; rel: string; type?: string }[] {
  return [...(header ?? '').matchAll(/<([^>]*)>((?:\s*;\s*[a-z-]+="[^"]*")*)/g)].map(([, href, params]) => {
    const p = Object.fromEntries([...params!.matchAll(/([a-z-]+)="([^"]*)"/g)].map(([, k, v]) => [k, v]));
    return { href: href!, rel: p.rel!, ...(p.type ? { type: p.type } : {}) };
  });
}

describe('Markdown for agents: negotiation on every page', () => {
  for (const [page, twin, says] of PAGES) {
    it(`${page}: HTML by default, Markdown for Accept: text/markdown, each with its validators and Vary`, async () => {
      const html = await get(page, { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
      expect(html.status).toBe(200);
      expect(html.headers.get('content-type')).toMatch(/^text\/html/);
      expect(html.headers.get('vary')).toMatch(/\bAccept\b.*Accept-Encoding|Accept-Encoding.*\bAccept\b(?!-)/);
      expect(links(html.headers.get('link'))).toContainEqual({ href: twin, rel: 'alternate', type: 'text/markdown' });
      // The page's head names its twin too, for agents that read HTML first.
      expect(await html.text()).toMatch(
        new RegExp(`<link rel="alternate" href="[^"]*${twin.replace(/[.]/g, '\\.')}" type="text/markdown"`),
      );

      const md = await get(page, { Accept: 'text/markdown' });
      expect(md.status).toBe(200);
      expect(md.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(md.headers.get('vary')).toBe('Accept, Accept-Encoding');
      expect(md.headers.get('content-location')).toBe(twin);
      const body = await md.text();
      expect(body).toMatch(says);
      expect(body).not.toMatch(/<html|<nav|<script/i);
      expect(md.headers.get('x-markdown-tokens')).toBe(String(estimateTokens(body)));
      const etag = md.headers.get('etag')!;
      expect(etag).toMatch(/^"[^"]+"$/);
      if (!LIVE.has(page)) expect(etag).not.toBe(html.headers.get('etag'));

      // The twin's own URL: the same bytes and ETag, linking back to the page.
      const direct = await get(twin);
      expect(direct.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(await direct.text()).toBe(body);
      expect(direct.headers.get('etag')).toBe(etag);
      expect(direct.headers.get('x-markdown-tokens')).toBe(md.headers.get('x-markdown-tokens'));
      expect(links(direct.headers.get('link'))).toContainEqual({ href: page, rel: 'alternate', type: 'text/html' });

      // 304 per representation: the Markdown's ETag revalidates the Markdown, not the HTML.
      const again = await get(page, { Accept: 'text/markdown', 'If-None-Match': etag });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect(again.headers.get('vary')).toBe('Accept, Accept-Encoding');
      const other = await get(page, { Accept: 'text/html', 'If-None-Match': etag });
      expect(other.status).toBe(200);
      expect(other.headers.get('content-type')).toMatch(/^text\/html/);
      await other.text();
      if (!LIVE.has(page)) {
        const htmlTag = html.headers.get('etag')!;
        const fresh = await get(page, { Accept: 'text/html', 'If-None-Match': htmlTag });
        expect(fresh.status).toBe(304);
        const notMd = await get(page, { Accept: 'text/markdown', 'If-None-Match': htmlTag });
        expect(notMd.status).toBe(200);
        await notMd.text();
      }
      // Each coding of the Markdown has its own strong ETag too.
      const identity = await get(page, { Accept: 'text/markdown', 'Accept-Encoding': 'identity' });
      const base = identity.headers.get('etag')!;
      expect(etag.startsWith(base.slice(0, -1))).toBe(true);
      await identity.arrayBuffer();
      const br = await get(page, { Accept: 'text/markdown', 'Accept-Encoding': 'br' });
      if (br.headers.get('content-encoding') === 'br') expect(br.headers.get('etag')).toBe(base.replace(/"$/, '-br"'));
      await br.arrayBuffer();
    });
  }

  it('follows q-values, specificity and q=0 (RFC 9110 12.5.1); a tie goes to HTML', async () => {
    const cases: [accept: string, markdown: boolean][] = [
      ['text/markdown', true],
      ['text/markdown, text/html;q=0.9', true],
      ['text/html, text/markdown', false],
      ['text/markdown;q=0.5, text/html', false],
      ['text/html;q=0.5, text/markdown', true],
      ['TEXT/MARKDOWN', true],
      ['text/*, text/markdown', true],
      ['*/*', false],
      ['text/*', false],
      ['text/markdown;q=0, */*', false],
      ['text/html;q=0, */*;q=0.1', true],
      ['application/json', false],
      ['', false],
    ];
    for (const [accept, markdown] of cases) {
      const res = await get('/whats-next', accept === '' ? {} : { Accept: accept });
      expect(res.headers.get('content-type'), accept).toMatch(markdown ? /^text\/markdown/ : /^text\/html/);
      await res.text();
    }
  });

  it('HEAD answers a Markdown read with its headers and no body', async () => {
    const res = await fetch(`${server.url}/whats-next`, { method: 'HEAD', headers: { Accept: 'text/markdown' } });
    expect(res.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(Number(res.headers.get('content-length'))).toBeGreaterThan(0);
    expect(await res.text()).toBe('');
  });

  it('llms.txt links every Markdown twin', async () => {
    const text = await (await get('/llms.txt')).text();
    for (const [, twin] of PAGES) expect(text, twin).toContain(`${twin})`);
  });
});

describe('Link headers (RFC 8288) on every document', () => {
  it('the home page links the API catalog, the OpenAPI and the reference', async () => {
    const res = await get('/');
    const l = links(res.headers.get('link'));
    expect(l).toContainEqual({
      href: '/.well-known/api-catalog',
      rel: 'api-catalog',
      type: 'application/linkset+json',
    });
    expect(l).toContainEqual({
      href: '/openapi.json',
      rel: 'service-desc',
      type: 'application/vnd.oai.openapi+json;version=3.1',
    });
    expect(l).toContainEqual({ href: '/docs/api', rel: 'service-doc', type: 'text/html' });
    await res.text();
  });

  it('pages and their JSON name each other; the OpenAPI names its reference', async () => {
    const expectations: [path: string, link: { href: string; rel: string; type?: string }][] = [
      ['/whats-next', { href: '/whats-next.json', rel: 'alternate', type: 'application/json' }],
      ['/whats-next.json', { href: '/whats-next', rel: 'alternate', type: 'text/html' }],
      ['/whats-next.json', { href: '/whats-next.md', rel: 'alternate', type: 'text/markdown' }],
      ['/bot-wall.json', { href: '/bot-wall', rel: 'alternate', type: 'text/html' }],
      ['/bot-wall', { href: '/bot-wall.csv', rel: 'alternate', type: 'text/csv' }],
      [
        '/docs/api',
        { href: '/openapi.json', rel: 'service-desc', type: 'application/vnd.oai.openapi+json;version=3.1' },
      ],
      ['/openapi.json', { href: '/docs/api', rel: 'service-doc', type: 'text/html' }],
      [
        '/api/doctrine/collapse-vs-drift',
        { href: '/doctrine/model-collapse-vs-constitutional-drift', rel: 'alternate', type: 'text/html' },
      ],
    ];
    for (const [path, link] of expectations) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(links(res.headers.get('link')), path).toContainEqual(link);
      await res.arrayBuffer();
    }
  });

  it('every document of the catalog has one', async () => {
    for (const { path } of DOCUMENTS) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('link') ?? `no Link on ${path}`, path).toMatch(/rel="/);
      await res.arrayBuffer();
    }
  });
});

describe('/.well-known/api-catalog (RFC 9727)', () => {
  it('is a linkset of the HTTP API, MCP, A2A and llms.txt, each with what describes it', async () => {
    const res = await get('/.well-known/api-catalog');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(
      'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"',
    );
    expect(res.headers.get('etag')).toMatch(/^"/);
    const { linkset } = (await res.json()) as { linkset: ({ anchor: string } & Record<string, any>)[] };
    const [self, ...apis] = linkset;
    expect(self!.anchor).toMatch(/\/\.well-known\/api-catalog$/);
    expect(self!.item.map((i: { href: string }) => i.href)).toEqual(apis.map((a) => a.anchor));
    const byPath = Object.fromEntries(apis.map((a) => [new URL(a.anchor).pathname, a]));
    expect(Object.keys(byPath)).toEqual(['/api/', '/mcp', '/a2a', '/llms.txt']);
    expect(byPath['/api/']!['service-desc'][0]).toMatchObject({
      type: 'application/vnd.oai.openapi+json;version=3.1',
    });
    expect(new URL(byPath['/api/']!['service-desc'][0].href).pathname).toBe('/openapi.json');
    expect(byPath['/api/']!['service-doc'].map((t: { href: string }) => new URL(t.href).pathname)).toEqual([
      '/docs/api',
      '/docs/api.md',
    ]);
    expect(new URL(byPath['/a2a']!['service-desc'][0].href).pathname).toBe('/.well-known/agent-card.json');
    // RFC 9264 section 4.2: every relation's value is an array of target objects with an href.
    for (const context of linkset)
      for (const [rel, targets] of Object.entries(context)) {
        if (rel === 'anchor') continue;
        expect(Array.isArray(targets), rel).toBe(true);
        for (const t of targets as { href: string }[]) expect(() => new URL(t.href), rel).not.toThrow();
      }
    // Every target that answers GET is served here.
    const gets = apis.flatMap((a) => ['service-desc', 'service-doc', 'status'].flatMap((r) => a[r] ?? []));
    for (const t of gets as { href: string }[]) {
      const target = await get(new URL(t.href).pathname);
      expect(target.status, t.href).toBe(200);
      await target.arrayBuffer();
    }
  });
});

describe('AI usage preferences (IETF aipref drafts)', () => {
  it('robots.txt states them in the group as Content-Usage rules', async () => {
    const text = await (await get('/robots.txt')).text();
    const group = text.slice(text.indexOf('User-agent: *'), text.indexOf('\n\n'));
    expect(group).toContain('\nContent-Usage: train-ai=y, search=y');
    expect(group).toContain('\nContent-Usage: /bot-wall train-ai=n, search=y');
  });

  it('every document sends the preference of its path as the Content-Usage header', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['/whats-next', {}, 'train-ai=y, search=y'],
      ['/whats-next', { Accept: 'text/markdown' }, 'train-ai=y, search=y'],
      ['/openapi.json', {}, 'train-ai=y, search=y'],
      ['/bot-wall.md', {}, 'train-ai=n, search=y'],
      ['/bot-wall.json', {}, 'train-ai=n, search=y'],
      ['/bot-wall', {}, 'train-ai=n, search=y'],
      ['/bot-wall', { Accept: 'text/markdown' }, 'train-ai=n, search=y'],
    ];
    for (const [path, headers, usage] of cases) {
      const res = await get(path, headers);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-usage'), `${path} ${JSON.stringify(headers)}`).toBe(usage);
      await res.arrayBuffer();
    }
  });
});
