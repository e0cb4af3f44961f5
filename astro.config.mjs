// @ts-check
import node from '@astrojs/node';
import { defineConfig } from 'astro/config';
import staticManifest from './src/integrations/static-manifest.ts';

export default defineConfig({
  site: process.env.SITE_URL ?? 'http://localhost:4321',
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
  integrations: [staticManifest()],
  // No cookies: agents POST JSON without an Origin header. The gateway checks media types.
  security: { checkOrigin: false },
  session: false,
  devToolbar: { enabled: false },
});
