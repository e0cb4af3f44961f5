/**
 * A built site served by the real server, with a few crawlers already counted: what the screenshots
 * and Lighthouse look at. The build carries its own address, so canonical links stay on the origin.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { startServerProcess, type ServerProcess } from '../test/helpers/server.ts';
import { seedCrawlers } from './browser.ts';

export async function serveSite(): Promise<ServerProcess> {
  const port = Number(process.env.PAGES_PORT ?? 4455);
  const site = `http://127.0.0.1:${port}`;
  const dist = resolve('bench/results/site-dist');
  const build = spawnSync(process.execPath, ['node_modules/.bin/astro', 'build', '--silent'], {
    env: { ...process.env, DIST_DIR: dist, SITE_URL: site },
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error('astro build failed');
  const server = await startServerProcess({
    PORT: String(port),
    DIST_DIR: dist,
    SITE_URL: site,
    WRITE_RATE_LIMIT: '0',
  });
  await seedCrawlers(server.url);
  return server;
}
