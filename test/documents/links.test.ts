import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContentError, loadContent } from '../../api/content/load.ts';
import { canonicalUrlOf } from '../../api/documents/property.ts';
import { placeholderUrls } from '../../api/schemas/content.ts';
import { CANON_URL } from '../helpers/env.ts';
import { ownAddress, startServer, type TestServer } from '../helpers/server.ts';

// Documents link only to what answers GET, name the method of a POST route,
// mark URI templates, and publish no placeholder or scheme-swapped URL.

let server: TestServer;
beforeAll(async () => {
  // Documents name the address they are served from, so every published link can be followed.
  server = await startServer({ ...(await ownAddress()), WRITE_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await server.stop();
});

const getJson = async (path: string) => (await (await fetch(server.url + path)).json()) as Record<string, any>;
/** The documents that carry links, as agents read them. */
const DOCS = ['/api/convert', '/agents/kit.json', '/whats-next.json', '/api/ingress', '/.well-known/property.json'];
/** This build serves the canonical site's documents too: follow {canon_url} links here. */
const local = (url: string) => url.replace(CANON_URL, server.url);

/** Every absolute URL of a document, except those whose object names a POST method beside them. */
function followable(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    if (/^https?:\/\//.test(value) && (value.startsWith(server.url) || value.startsWith(CANON_URL))) out.push(value);
  } else if (Array.isArray(value)) value.forEach((v) => followable(v, out));
  else if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    for (const [key, v] of Object.entries(o)) {
      if (key === 'url' && o.method !== undefined && o.method !== 'GET') continue;
      // A url_template is expanded before use (tested below); curl and python texts are programs.
      if (key === '$id' || key === 'url_template' || key === 'curl' || key === 'python_oneshot') continue;
      followable(v, out);
    }
  }
  return out;
}

describe('every link a document publishes answers GET', () => {
  it('follows every URL of the convert payload, kit, whats-next, ingress and property documents', async () => {
    const urls = new Set<string>();
    for (const path of DOCS) for (const url of followable(await getJson(path))) urls.add(url);
    expect(urls.size).toBeGreaterThan(20);
    const failed: string[] = [];
    for (const url of urls) {
      const res = await fetch(local(url));
      await res.arrayBuffer();
      if (res.status !== 200) failed.push(`${res.status} ${url}`);
    }
    expect(failed).toEqual([]);
  });

  it('related links answer GET and include the bot wall, bot traffic, health and scoreboard', async () => {
    for (const path of ['/api/convert', '/agents/kit.json']) {
      const { related } = await getJson(path);
      expect(Object.keys(related)).toEqual(expect.arrayContaining(['bot_wall', 'bot_traffic', 'health', 'scoreboard']));
      const paths = Object.values(related).map((u) => new URL(u as string).pathname);
      expect(paths).not.toContain('/api/citizenship/oath');
      expect(paths).not.toContain('/api/intelligence/message');
    }
    expect(
      Object.values((await getJson('/api/ingress')).related).map((u) => new URL(u as string).pathname),
    ).not.toContain('/api/ingress/audio');
  });

  it('names the method wherever a POST route appears', async () => {
    const whatsNext = await getJson('/whats-next.json');
    expect(whatsNext.join.oath).toEqual({ method: 'POST', url: `${server.url}/api/citizenship/oath` });
    const llms = await (await fetch(`${server.url}/llms.txt`)).text();
    const linked = [...llms.matchAll(/\]\(([^)]+)\)/g)].map((m) => new URL(m[1]!).pathname);
    expect(linked).not.toContain('/api/citizenship/oath');
    expect(linked).not.toContain('/api/omip/score');
    expect(llms).toMatch(/- \[take_oath\]\([^)]+\/docs\/api\): POST `[^`]+\/api\/citizenship\/oath`/);
    expect(llms).toMatch(
      /- \[get_receipt\]\([^)]+\/docs\/api\): GET `[^`]+\/api\/omip\/receipts\/\{id\}` \(an RFC 6570 URI template/,
    );
    for (const path of linked.filter((p) => !p.includes('{')))
      expect((await fetch(server.url + path)).status, path).toBe(200);
  });

  it('a URL with a parameter is an RFC 6570 url_template, and expanding it reaches a receipt', async () => {
    const { tools } = await getJson('/api/convert');
    const receipt = tools.find((t: any) => t.name === 'get_receipt');
    expect(receipt.url).toBeUndefined();
    expect(receipt.url_template).toBe(`${server.url}/api/omip/receipts/{id}`);
    for (const t of tools) if (t.url !== undefined) expect(t.url).not.toMatch(/[{}]/);
    expect((await getJson('/agents/kit.json')).tools.find((t: any) => t.name === 'get_receipt').url_template).toBe(
      receipt.url_template,
    );
    expect((await getJson('/api/omip/health')).methods.Allow.GET).toContain('/api/omip/receipts/{id}');
    const made = await fetch(`${server.url}/api/omip/dual-exchange`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        agents: [
          { id: 'sovereign-a', proposal: { plan: { steps: [{ action: 'read' }] } } },
          { id: 'sovereign-b', proposal: { plan: { steps: [{ action: 'read' }] } } },
        ],
      }),
    });
    const id = (await made.json()).receipt.id as string;
    const expanded = receipt.url_template.replace('{id}', encodeURIComponent(id));
    expect((await fetch(expanded)).status).toBe(200);
  });
});

describe('no placeholder or scheme-swapped URL is published', () => {
  it('the property descriptor carries the https CANON_URL, no placeholder repository or notSameAs', async () => {
    const p = await getJson('/.well-known/property.json');
    expect(p.canonicalUrl).toBe(`${CANON_URL}/`);
    expect(placeholderUrls(JSON.stringify({ repository: p.repository, notSameAs: p.notSameAs }))).toEqual([]);
  });

  it('no served document carries example.com, example.org or example.net', async () => {
    for (const path of [...DOCS, '/llms.txt', '/.well-known/ai.txt', '/eon/constitution.json']) {
      const text = await (await fetch(server.url + path)).text();
      expect(text, path).not.toMatch(/\bexample\.(?:com|org|net)\b/);
    }
  });

  it('recognises placeholder hosts, and only those', () => {
    expect(placeholderUrls('see https://example.org/agentnode/agentnode and https://example.com/')).toEqual([
      'https://example.org/agentnode/agentnode',
      'https://example.com/',
    ]);
    expect(
      placeholderUrls('https://canon.agentnode.example/x http://foo.test http://localhost:3000/ https://a.invalid'),
    ).toHaveLength(4);
    expect(placeholderUrls('https://open.spotify.com/album/x https://examples.com/ https://myexample.org/')).toEqual(
      [],
    );
  });

  it('never makes an http CANON_URL https by swapping its scheme', async () => {
    const c = await loadContent('content');
    expect(() => canonicalUrlOf(c, { site: 'http://127.0.0.1:5102', canon: 'http://127.0.0.1:5102' })).toThrow(
      /property\.yaml: canonicalUrl: .*http:\/\/127\.0\.0\.1:5102/,
    );
    expect(
      canonicalUrlOf(
        { ...c, property: { ...c.property, canonicalUrl: 'https://agentnode.net/' } },
        { site: 'http://x', canon: 'http://127.0.0.1:5102' },
      ),
    ).toBe('https://agentnode.net/');
    expect(canonicalUrlOf(c, { site: 'http://x', canon: 'https://canon.site' })).toBe('https://canon.site/');
  });
});

/** A copy of content/ with one file changed (as test/build/content-errors.test.ts does). */
function changedContent(file: string, change: (text: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'content-'));
  cpSync('content', dir, { recursive: true });
  writeFileSync(join(dir, file), change(readFileSync(join(dir, file), 'utf8')));
  return dir;
}
// A build that renders pages must write inside the worktree, where its packages resolve.
const build = (dir: string, env: Record<string, string> = {}, dist = join(dir, 'dist')) => {
  const result = spawnSync('node_modules/.bin/astro', ['build'], {
    env: { ...process.env, CONTENT_DIR: dir, DIST_DIR: dist, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  // With CI=true Astro colours its output even into a pipe: read the text without escapes.
  return { status: result.status, output: (result.stdout + result.stderr).replace(/\x1b\[[0-9;]*m/g, '') };
};

describe('a build that would publish a placeholder fails, naming the content field', () => {
  it('content with a placeholder URL is a ContentError naming file and field', async () => {
    const dir = changedContent('property.yaml', (t) =>
      t.replace(/^notSameAs: \[\]$/m, 'notSameAs: [https://example.com/]'),
    );
    const error = await loadContent(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContentError);
    expect((error as ContentError).message).toMatch(
      /^property\.yaml: notSameAs\.0: https:\/\/example\.com\/ is a placeholder/,
    );
  });

  it('fails the Astro build on a placeholder repository', () => {
    const dir = changedContent('property.yaml', (t) =>
      t.replace(/^repository: .*$/m, 'repository: https://example.org/agentnode/agentnode'),
    );
    const { status, output } = build(dir);
    expect(status).not.toBe(0);
    expect(output).toContain('property');
    expect(output).toMatch(/repository/);
    expect(output).toMatch(/https:\/\/example\.org\/agentnode\/agentnode is a placeholder/);
  }, 120_000);

  it('fails the Astro build when CANON_URL is http and content sets no canonicalUrl; builds with one', () => {
    const http = { CANON_URL: 'http://127.0.0.1:5102', SITE_URL: 'http://127.0.0.1:5102' };
    const dist = resolve('test-results', `dist-canon-${process.pid}`);
    try {
      const without = build(
        changedContent('property.yaml', (t) => t),
        http,
        dist,
      );
      expect(without.status).not.toBe(0);
      expect(without.output).toMatch(
        /property\.yaml: canonicalUrl: .*CANON_URL \(http:\/\/127\.0\.0\.1:5102\) is not https/,
      );
      const withUrl = build(
        changedContent('property.yaml', (t) => `${t}canonicalUrl: https://agentnode.net/\n`),
        http,
        dist,
      );
      expect(withUrl.status, withUrl.output).toBe(0);
      expect(JSON.parse(readFileSync(join(dist, 'client/.well-known/property.json'), 'utf8')).canonicalUrl).toBe(
        'https://agentnode.net/',
      );
    } finally {
      rmSync(dist, { recursive: true, force: true });
    }
  }, 240_000);
});
