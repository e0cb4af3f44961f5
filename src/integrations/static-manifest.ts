import { writeFile } from 'node:fs/promises';
import type { AstroIntegration } from 'astro';
import { fileURLToPath } from 'node:url';
import { PRECOMPRESSED_DIR, precompressSite, type StaticManifest } from '../../api/gateway/static-site.ts';
import { COMMON_SECURITY_HEADERS, HTML_CSP, securityHeaders } from '../../api/http/security-headers.ts';
import { resolve } from 'node:path';
import { loadContent } from '../../api/content/load.ts';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { linkHeaders } from '../../api/documents/representations.ts';
import { preferenceOf, serialisePreference, usageRulesOf } from '../../api/telemetry/robots/preferences.ts';

/** Name of the manifest the gateway reads: URL path -> response headers of prerendered routes. */
export const STATIC_MANIFEST = 'static-manifest.json';

/**
 * Records the headers of every prerendered route (Content-Type above all, which extensionless
 * files like /api/convert cannot carry) as JSON for the gateway and as `_headers` for CDNs, and
 * the SITE_URL the documents were built with, so that a service started under another one
 * (another PORT) serves them with its own address (api/gateway/static-site.ts).
 */
export default function staticManifest({ siteUrl }: { siteUrl: string }): AstroIntegration {
  return {
    name: 'static-manifest',
    hooks: {
      'astro:build:generated': async ({ dir, routeToHeaders }) => {
        const manifest: StaticManifest['routes'] = {};
        for (const [pathname, { headers }] of routeToHeaders) {
          const type = headers.get('content-type');
          if (type) manifest[pathname] = { 'content-type': type };
        }
        const recorded: StaticManifest = { siteUrl, routes: manifest };
        await writeFile(new URL(`../${STATIC_MANIFEST}`, dir), JSON.stringify(recorded, null, 2));
        // Every answer gets the security headers with the HTML policy; a CDN adds the rules of every
        // matching path, so a non-HTML document adds the stricter policy, and the two together allow
        // only what both allow (api/http/security-headers.ts).
        const all = { ...COMMON_SECURITY_HEADERS, 'Content-Security-Policy': HTML_CSP };
        const extra = (type: string): Record<string, string> =>
          /^text\/html\b/.test(type)
            ? {}
            : { 'Content-Security-Policy': securityHeaders(type)['Content-Security-Policy']! };
        // Each document's Link and Content-Usage, as the gateway sends them (a CDN does not negotiate
        // Markdown: its .md twins are served at their own paths).
        const links = linkHeaders(DOCUMENTS);
        const usage = usageRulesOf((await loadContent(resolve(process.env.CONTENT_DIR ?? 'content'))).crawlPolicy);
        const described = (path: string): Record<string, string> => {
          const link = links.get(path);
          const prefs = serialisePreference(preferenceOf(path, usage));
          return { ...(link ? { Link: link } : {}), ...(prefs ? { 'Content-Usage': prefs } : {}) };
        };
        const entries: [string, Record<string, string>][] = [
          ['/*', all],
          ['/_astro/*', { 'Cache-Control': 'public, max-age=31536000, immutable' }],
          ...Object.entries(manifest).map(([path, h]): [string, Record<string, string>] => [
            path,
            { ...h, ...extra(h['content-type']!), ...described(path) },
          ]),
        ];
        const cdn = entries.map(
          ([path, h]) =>
            `${path}\n${Object.entries(h)
              .map(([k, v]) => `  ${k}: ${v}`)
              .join('\n')}`,
        );
        await writeFile(new URL('_headers', dir), `${cdn.join('\n')}\n`);
      },
      // Brotli at its best costs about a second over the site: paid once here, not at every start.
      'astro:build:done': async ({ dir }) => {
        await precompressSite(fileURLToPath(dir), fileURLToPath(new URL(`../${PRECOMPRESSED_DIR}/`, dir)));
      },
    },
  };
}
