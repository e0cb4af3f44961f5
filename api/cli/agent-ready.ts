import { pathToFileURL } from 'node:url';
import { PATH } from '../operations/paths.ts';
import { parsePreference, serialisePreference } from '../telemetry/robots/preferences.ts';

/**
 * npm run agent-ready -- URL: checks a site, ours or another, against 2026's conventions for
 * agents (llms.txt, Markdown for agents, RFC 8288 Link headers, the RFC 9727 API catalog,
 * robots.txt with aipref Content-Usage, MCP and its protocol versions, the A2A card, the OpenAPI,
 * a Web Bot Auth key directory). Prints a table; exits 1 when a check fails, 2 on bad usage.
 * A check whose convention the site does not take up where it is optional is `skip`, not a failure.
 */

export type Result = 'pass' | 'fail' | 'skip';
export interface Check {
  name: string;
  result: Result;
  detail: string;
}

/** What one check reads at most: a body past it is cut (no site makes this tool hold more). */
export const AGENT_READY_LIMITS = { bodyBytes: 4 * 1024 * 1024, timeoutMs: 10_000 } as const;
/** The MCP protocol versions asked for, newest first. */
export const MCP_VERSIONS = ['2026-07-28', '2025-11-25'] as const;

interface Got {
  status: number;
  headers: Headers;
  text: string;
}

async function request(url: string, init: RequestInit = {}): Promise<Got> {
  const res = await fetch(url, {
    redirect: 'follow',
    signal: AbortSignal.timeout(AGENT_READY_LIMITS.timeoutMs),
    ...init,
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    const part = chunk as Uint8Array;
    chunks.push(part.subarray(0, Math.max(0, AGENT_READY_LIMITS.bodyBytes - size)));
    size += part.byteLength;
    if (size >= AGENT_READY_LIMITS.bodyBytes) {
      await res.body?.cancel().catch(() => undefined);
      break;
    }
  }
  return { status: res.status, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') };
}

const json = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
const typeOf = (g: Got) => (g.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
/** The targets of a Link header with their relation types (RFC 8288 section 3). */
export function linkTargets(header: string | null): { href: string; rels: string[] }[] {
  return [...(header ?? '').matchAll(/<([^>]*)>([^,<]*(?:"[^"]*"[^,<]*)*)/g)].map(([, href, params]) => ({
    href: href!,
    rels: (/;\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]+))/i.exec(params!)?.slice(1).find(Boolean) ?? '')
      .toLowerCase()
      .split(/\s+/),
  }));
}

/** Every check against `site` (an origin, or an origin with a path prefix), in the table's order. */
export async function checkSite(site: string): Promise<Check[]> {
  const base = new URL(site.endsWith('/') ? site : `${site}/`);
  const at = (path: string) => new URL(path.replace(/^\//, ''), base).href;
  const checks: Check[] = [];
  const run = async (name: string, check: () => Promise<[Result, string]>) => {
    try {
      const [result, detail] = await check();
      checks.push({ name, result, detail });
    } catch (error) {
      checks.push({ name, result: 'fail', detail: error instanceof Error ? error.message : String(error) });
    }
  };
  let catalog: { anchor: string; [rel: string]: unknown }[] | undefined;

  await run('llms.txt', async () => {
    const g = await request(at('/llms.txt'));
    if (g.status !== 200) return ['fail', `GET /llms.txt answered ${g.status}`];
    if (!/^# \S/.test(g.text)) return ['fail', 'does not open with an H1 (llmstxt.org)'];
    const links = g.text.match(/\]\([^)]+\)/g)?.length ?? 0;
    const md = g.text.match(/\]\([^)]+\.md\)/g)?.length ?? 0;
    return ['pass', `${links} links, ${md} to Markdown`];
  });

  await run('Markdown for agents', async () => {
    const g = await request(at('/'), { headers: { Accept: 'text/markdown' } });
    if (g.status !== 200) return ['fail', `GET / with Accept: text/markdown answered ${g.status}`];
    if (typeOf(g) !== 'text/markdown')
      return ['fail', `GET / with Accept: text/markdown answered ${typeOf(g) || 'no type'}`];
    const vary = (g.headers.get('vary') ?? '').toLowerCase().split(/\s*,\s*/);
    if (!vary.includes('accept') && !vary.includes('*')) return ['fail', 'text/markdown without Vary: Accept'];
    const tokens = g.headers.get('x-markdown-tokens');
    const html = await request(at('/'), { headers: { Accept: 'text/html' } });
    if (typeOf(html) === 'text/markdown') return ['fail', 'answers Markdown to Accept: text/html too'];
    return [
      'pass',
      `text/markdown, Vary: Accept${tokens ? `, x-markdown-tokens ${tokens}` : ', no x-markdown-tokens'}`,
    ];
  });

  await run('Link headers', async () => {
    const g = await request(at('/'));
    const targets = linkTargets(g.headers.get('link'));
    if (targets.length === 0) return ['fail', 'GET / has no Link header'];
    const rels = [...new Set(targets.flatMap((t) => t.rels))].filter(Boolean);
    if (!rels.includes('api-catalog')) return ['fail', `no rel="api-catalog" on / (has ${rels.join(', ')})`];
    return ['pass', `on /: ${rels.join(', ')}`];
  });

  await run('API catalog (RFC 9727)', async () => {
    const g = await request(at('/.well-known/api-catalog'), { headers: { Accept: 'application/linkset+json' } });
    if (g.status !== 200) return ['fail', `GET /.well-known/api-catalog answered ${g.status}`];
    if (typeOf(g) !== 'application/linkset+json')
      return ['fail', `served as ${typeOf(g) || 'no type'}, not application/linkset+json`];
    const body = json(g.text) as { linkset?: unknown } | undefined;
    if (!body || !Array.isArray(body.linkset)) return ['fail', 'no "linkset" array (RFC 9264 section 4.2)'];
    const contexts = body.linkset as { anchor?: unknown }[];
    if (!contexts.every((c) => typeof c === 'object' && c !== null && typeof c.anchor === 'string'))
      return ['fail', 'a link context without an anchor'];
    catalog = contexts as typeof catalog;
    const described = contexts.filter((c) => 'service-desc' in c || 'service-doc' in c).length;
    return ['pass', `${contexts.length} contexts, ${described} with service-desc or service-doc`];
  });

  await run('robots.txt Content-Usage (aipref)', async () => {
    const g = await request(at('/robots.txt'));
    if (g.status !== 200) return ['fail', `GET /robots.txt answered ${g.status}`];
    const lines = g.text.split(/\r?\n/).filter((l) => /^\s*content-usage\s*:/i.test(l));
    const header = (await request(at('/'))).headers.get('content-usage');
    if (lines.length === 0 && header === null) return ['fail', 'no Content-Usage rule in robots.txt nor header on /'];
    const stated = lines.map((l) => serialisePreference(parsePreference(l.replace(/^[^:]*:\s*(\/\S*\s+)?/, ''))));
    return [
      lines.length > 0 ? 'pass' : 'fail',
      `${lines.length} rule(s)${stated[0] ? ` (${stated[0]}${lines.length > 1 ? ', …' : ''})` : ''}; header on /: ${header ?? 'none'}`,
    ];
  });

  await run('MCP', async () => {
    // The catalog's MCP anchor, else the path MCP servers are usually at (ours, PATH.mcp).
    const mcp =
      catalog?.map((c) => c.anchor).find((a) => new URL(a).pathname.replace(/\/$/, '').endsWith(PATH.mcp)) ??
      at(PATH.mcp);
    const answered: string[] = [];
    const refused: string[] = [];
    for (const version of MCP_VERSIONS) {
      const g = await request(mcp, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': version,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'agent-ready', version: '1' } },
        }),
      });
      // A JSON answer, or the first event of a stream.
      const text = typeOf(g) === 'text/event-stream' ? (/^data:\s?(.*)$/m.exec(g.text)?.[1] ?? '') : g.text;
      const answer = json(text) as { result?: { protocolVersion?: string } } | undefined;
      const agreed = answer?.result?.protocolVersion;
      if (g.status === 200 && agreed) answered.push(agreed === version ? version : `${version}→${agreed}`);
      else refused.push(`${version} (${g.status})`);
    }
    if (answered.length === 0) return ['fail', `initialize at ${new URL(mcp).pathname} refused: ${refused.join(', ')}`];
    return [
      'pass',
      `${new URL(mcp).pathname}: ${answered.join(', ')}${refused.length ? `; refused ${refused.join(', ')}` : ''}`,
    ];
  });

  await run('A2A agent card', async () => {
    const g = await request(at('/.well-known/agent-card.json'));
    if (g.status !== 200) return ['fail', `GET /.well-known/agent-card.json answered ${g.status}`];
    const card = json(g.text) as { name?: unknown; skills?: unknown; supportedInterfaces?: unknown; url?: unknown };
    if (!card || typeof card.name !== 'string') return ['fail', 'not an agent card (no name)'];
    if (!Array.isArray(card.skills)) return ['fail', 'no skills'];
    return ['pass', `${card.name}: ${card.skills.length} skills`];
  });

  await run('OpenAPI', async () => {
    const desc = catalog?.flatMap((c) => (Array.isArray(c['service-desc']) ? c['service-desc'] : []))[0] as
      { href?: string } | undefined;
    const url = desc?.href ? new URL(desc.href, base).href : at('/openapi.json');
    const g = await request(url);
    if (g.status !== 200) return ['fail', `GET ${new URL(url).pathname} answered ${g.status}`];
    const spec = json(g.text) as { openapi?: unknown; paths?: unknown } | undefined;
    if (!spec || typeof spec.openapi !== 'string') return ['fail', 'not an OpenAPI document (JSON with "openapi")'];
    // A dev dependency: an install without them (the container) checks the shape only.
    const validator = await import('@seriousme/openapi-schema-validator').catch(() => undefined);
    if (!validator)
      return [
        'pass',
        `OpenAPI ${spec.openapi}, ${Object.keys(spec.paths ?? {}).length} paths (schema not validated: no validator installed)`,
      ];
    const { Validator } = validator;
    const result = await new Validator().validate(spec as never);
    if (!result.valid) {
      const first = (Array.isArray(result.errors) ? result.errors[0] : result.errors) as
        { message?: string } | undefined;
      return ['fail', `OpenAPI ${spec.openapi} invalid: ${first?.message ?? 'see the validator'}`];
    }
    return ['pass', `OpenAPI ${spec.openapi}, ${Object.keys(spec.paths ?? {}).length} paths, valid`];
  });

  await run('Web Bot Auth key directory', async () => {
    const g = await request(at('/.well-known/http-message-signatures-directory'));
    if (g.status === 404) return ['skip', 'none served (optional: only for a site that signs its own requests)'];
    if (g.status !== 200) return ['fail', `answered ${g.status}`];
    if (typeOf(g) !== 'application/http-message-signatures-directory+json')
      return ['fail', `served as ${typeOf(g) || 'no type'}`];
    const keys = (json(g.text) as { keys?: unknown } | undefined)?.keys;
    if (!Array.isArray(keys) || keys.length === 0) return ['fail', 'no keys'];
    return ['pass', `${keys.length} key(s)`];
  });
  return checks;
}

/** The checks as a plain-text table. */
export function table(checks: Check[]): string {
  const rows = [['check', 'result', 'detail'], ...checks.map((c) => [c.name, c.result, c.detail])];
  const width = [0, 1].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `${r[0]!.padEnd(width[0]!)}  ${r[1]!.padEnd(width[1]!)}  ${r[2]}`;
  return [
    line(rows[0]!),
    `${'-'.repeat(width[0]!)}  ${'-'.repeat(width[1]!)}  ------`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const site = process.argv[2];
  if (!site || !/^https?:\/\//.test(site)) {
    process.stderr.write('usage: npm run agent-ready -- https://example.com\n');
    process.exit(2);
  }
  const checks = await checkSite(site);
  process.stdout.write(`${table(checks)}\n`);
  process.exitCode = checks.some((c) => c.result === 'fail') ? 1 : 0;
}
