// @ts-check
import node from '@astrojs/node';
import { defineConfig } from 'astro/config';
import staticManifest from './src/integrations/static-manifest.ts';
import { loadConfig } from './api/config.ts';

// The documents' links ({base_url}) come from the same configuration the server reads at run time
// (SITE_URL, by default http://localhost:${PORT}); the build records it in static-manifest.json.
const { SITE_URL } = loadConfig();

export default defineConfig({
  site: SITE_URL,
  outDir: process.env.DIST_DIR ?? './dist',
  output: 'static',
  trailingSlash: 'ignore',
  // The CSP allows no inline style or script: every stylesheet and script is its own file.
  build: { format: 'directory', inlineStylesheets: 'never' },
  vite: { build: { assetsInlineLimit: 0 } },
  // Highlighters colour code with style attributes, which the CSP refuses: notes get plain code blocks.
  markdown: { syntaxHighlight: false },
  // The gateway (api/gateway) serves static files and owns the HTTP edge; Astro renders.
  adapter: node({ mode: 'middleware', staticHeaders: true }),
  integrations: [staticManifest({ siteUrl: SITE_URL })],
  // No cookies: agents POST JSON without an Origin header. The gateway checks media types.
  security: { checkOrigin: false },
  session: false,
  devToolbar: { enabled: false },
});
