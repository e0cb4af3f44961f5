import { normalisePath } from '../gateway/static-site.ts';
import { createRouter, type RoutePath } from '../http/router.ts';

/**
 * The operation a request path belongs to, for metric labels: the engine route's name, `page` for
 * pages Astro renders, `document` for prebuilt files, the probes by name, else `other`. A bounded
 * set, whatever paths clients send.
 */
export function operationNamer(routes: readonly RoutePath<string>[], isDocument: (path: string) => boolean, named: Record<string, string> = {}): (rawPath: string) => string {
  const names: Record<string, string> = {};
  for (const r of routes) if (r.route) names[r.route] = r.route;
  const route = createRouter(routes, names);
  const pages = new Set(routes.filter((r) => !r.route).map((r) => r.path));
  return (rawPath) => {
    const path = normalisePath(rawPath);
    if (path === null) return 'other';
    return named[path] ?? route(path) ?? (isDocument(path) ? 'document' : pages.has(path) ? 'page' : 'other');
  };
}
