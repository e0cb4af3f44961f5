import type { APIRoute } from 'astro';
import type { Routes } from '../../api/app.ts';

/** An Astro route that hands the request to one engine route. */
export const serve =
  (name: keyof Routes): APIRoute =>
  ({ request, clientAddress, locals }) =>
    locals.routes[name]({ request, client: clientAddress });
