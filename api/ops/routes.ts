import { timingSafeEqual } from 'node:crypto';
import { bearerToken, getOnly, header, HttpProblem, type RouteHandler } from '../http/index.ts';
import type { Metrics } from './metrics.ts';
import type { Readiness } from './probes.ts';

const TEXT = { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' };

/** GET /livez: the process answers. */
export const livez: RouteHandler = getOnly(async () => ({ status: 200, headers: TEXT, body: 'ok\n' }));

/** GET /readyz: 200 when every check passes, 503 with the failing ones otherwise. */
export const readyz = (readiness: Readiness): RouteHandler =>
  getOnly(async () => {
    const state = await readiness.state();
    const body = JSON.stringify({ status: state.ready ? 'ready' : 'not ready', checks: state.checks });
    return { status: state.ready ? 200 : 503, headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }, body };
  });

/** GET /metrics in Prometheus text; behind `Authorization: Bearer <token>` when a token is given. */
export const metricsRoute = (metrics: Metrics, token?: string): RouteHandler =>
  getOnly(async (request) => {
    if (token) {
      const given = Buffer.from(bearerToken(header(request, 'authorization')) ?? '');
      const wanted = Buffer.from(token);
      if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
        throw new HttpProblem(401, 'METRICS_TOKEN_REQUIRED', 'Send Authorization: Bearer <METRICS_TOKEN>.', { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } });
      }
    }
    const { contentType, body } = await metrics.scrape();
    return { status: 200, headers: { 'Content-Type': contentType, 'Cache-Control': 'no-store' }, body };
  });
