/** A route of the table: a method, an OpenAPI path template (`{name}` is one segment), a handler. */
export interface RouteEntry<H> {
  method: string;
  path: string;
  handler: H;
}

/** What a lookup finds: the handler and the path parameters, the methods the path takes, or nothing. */
export type RouteMatch<H> =
  { handler: H; params: Record<string, string> } | { allow: string[]; others: H[] } | undefined;

export interface Router<H> {
  /** The handler of a method and path with its parameters (raw); `{ allow, others }` when the path takes other methods. HEAD finds GET. */
  match(method: string, path: string): RouteMatch<H>;
}

/** The parameters of an exact path: none, one frozen object for all. */
const NO_PARAMS: Record<string, string> = Object.freeze({});

interface Template<H> {
  pattern: RegExp;
  names: string[];
  byMethod: Map<string, H>;
}

/**
 * Method-and-path routing (hono's `match(method, path)` returning params): exact paths are one Map
 * lookup, templates are tried in order. A trailing slash is ignored, as Astro's `trailingSlash:
 * 'ignore'` does for pages. Two handlers for one method and path are refused at start.
 */
export function createRouter<H>(entries: readonly RouteEntry<H>[]): Router<H> {
  const exact = new Map<string, Map<string, H>>();
  const templates = new Map<string, Template<H>>();
  for (const { method, path, handler } of entries) {
    let byMethod: Map<string, H>;
    if (path.includes('{')) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '([^/]+)')}$`);
      byMethod = (templates.get(path) ?? templates.set(path, { pattern, names, byMethod: new Map() }).get(path)!)
        .byMethod;
    } else {
      byMethod = exact.get(path) ?? exact.set(path, new Map()).get(path)!;
    }
    if (byMethod.has(method)) throw new Error(`two handlers for ${method} ${path}`);
    byMethod.set(method, handler);
  }

  const found = (byMethod: Map<string, H>, method: string, params: Record<string, string>): RouteMatch<H> => {
    const handler = byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
    if (handler !== undefined) return { handler, params };
    const allow = [...byMethod.keys()];
    return { allow: allow.includes('GET') ? [...allow, 'HEAD'] : allow, others: [...byMethod.values()] };
  };
  // An exact path's answers made once (callers only read them): every counted request looks up its
  // funnel step here, and two objects a lookup were garbage a request.
  const exactAnswers = new Map<string, { byMethod: Map<string, RouteMatch<H>>; refusal: RouteMatch<H> }>();
  for (const [path, byMethod] of exact) {
    const answers = new Map<string, RouteMatch<H>>();
    for (const method of byMethod.keys()) answers.set(method, found(byMethod, method, NO_PARAMS));
    if (!answers.has('HEAD') && answers.has('GET')) answers.set('HEAD', answers.get('GET'));
    exactAnswers.set(path, { byMethod: answers, refusal: found(byMethod, '', NO_PARAMS) });
  }

  return {
    match(method, path) {
      const key = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
      const answers = exactAnswers.get(key);
      if (answers) return answers.byMethod.get(method) ?? answers.refusal;
      for (const t of templates.values()) {
        const m = t.pattern.exec(key);
        if (!m) continue;
        const params: Record<string, string> = {};
        t.names.forEach((name, i) => (params[name] = m[i + 1]!));
        return found(t.byMethod, method, params);
      }
      return undefined;
    },
  };
}
