import { writeFile } from 'node:fs/promises';
import type { AstroIntegration } from 'astro';

/** Name of the manifest the gateway reads: URL path -> response headers of prerendered routes. */
export const STATIC_MANIFEST = 'static-manifest.json';

/**
 * Records the headers of every prerendered route (Content-Type above all, which extensionless
 * files like /api/convert cannot carry) as JSON for the gateway and as `_headers` for CDNs.
 */
export default function staticManifest(): AstroIntegration {
  return {
    name: 'static-manifest',
    hooks: {
      'astro:build:generated': async ({ dir, routeToHeaders }) => {
        const manifest: Record<string, Record<string, string>> = {};
        for (const [pathname, { headers }] of routeToHeaders) {
          const type = headers.get('content-type');
          if (type) manifest[pathname] = { 'content-type': type };
        }
        await writeFile(new URL(`../${STATIC_MANIFEST}`, dir), JSON.stringify(manifest, null, 2));
        const cdn = Object.entries(manifest).map(([path, h]) => `${path}\n${Object.entries(h).map(([k, v]) => `  ${k}: ${v}`).join('\n')}`);
        await writeFile(new URL('_headers', dir), `${cdn.join('\n')}\n`);
      },
    },
  };
}
