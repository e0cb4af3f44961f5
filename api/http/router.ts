/** A registered path: exact, or an OpenAPI template whose `{name}` stands for one path segment. */
export interface RoutePath<N extends string> {
  path: string;
  route?: N | undefined;
}

/**
 * The handler of a request path, or undefined. Exact paths are one Map lookup; templates are tried
 * in order. A trailing slash is ignored, as Astro's `trailingSlash: 'ignore'` does for pages.
 * A handler no path names is refused at start: it would be an unreachable route.
 */
export function createRouter<N extends string, H>(paths: readonly RoutePath<N>[], handlers: Record<N, H>): (path: string) => H | undefined {
  const exact = new Map<string, H>();
  const templates: [RegExp, H][] = [];
  for (const { path, route } of paths) {
    if (route === undefined) continue;
    if (path.includes('{')) templates.push([new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`), handlers[route]]);
    else exact.set(path, handlers[route]);
  }
  const unreached = Object.keys(handlers).filter((name) => !paths.some((p) => p.route === name));
  if (unreached.length > 0) throw new Error(`no path is registered for the route(s) ${unreached.join(', ')}`);
  return (path) => {
    const key = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    return exact.get(key) ?? templates.find(([pattern]) => pattern.test(key))?.[1];
  };
}
