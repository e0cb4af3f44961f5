import type { Logger } from 'pino';
import { createCitizenship } from './citizenship/citizenship.ts';
import { livingLattice, scoreboard } from './citizenship/community.ts';
import { createIdempotency, createWriteLimiter, getOnly, guard, json, pageQuery, writeRoute, type RouteHandler } from './http/index.ts';
import { MessageRequestSchema, OathRequestSchema } from './schemas/citizenship.ts';
import type { Store } from './store/types.ts';
import type { Presence } from './telemetry/presence.ts';

export interface AppDeps {
  store: Store;
  presence: Presence;
  logger: Logger;
  siteUrl: string;
  writeRateLimit: number;
}

/** Every on-demand route, framework-free: Astro's pages only hand requests to these. */
export function createRoutes(deps: AppDeps) {
  const { store, presence, logger } = deps;
  const citizenship = createCitizenship(store, deps.siteUrl);
  const writes = { limiter: createWriteLimiter(deps.writeRateLimit), idempotency: createIdempotency(store.idempotency) };
  const read = (answer: (request: Request) => Promise<unknown>): RouteHandler => getOnly(async ({ request }) => json(200, await answer(request)));

  const routes = {
    oath: writeRoute('oath', OathRequestSchema, writes, (input) => citizenship.takeOath(input)),
    message: writeRoute('message', MessageRequestSchema, writes, (input, { request }) => citizenship.postMessage(input, request.headers.get('authorization'))),
    citizens: read((request) => citizenship.citizens(pageQuery(request))),
    feed: read((request) => citizenship.feed(pageQuery(request))),
    scoreboard: read(() => scoreboard(store, presence, new Date())),
    livingLattice: read(() => livingLattice(store, presence, new Date())),
  } satisfies Record<string, RouteHandler>;

  return Object.fromEntries(Object.entries(routes).map(([name, handler]) => [name, guard(handler, logger)])) as typeof routes;
}
export type Routes = ReturnType<typeof createRoutes>;
