import { bearerMatches, HttpProblem, type RouteHandler } from '../http/index.ts';
import type { Metrics } from './metrics.ts';
import type { Readiness } from './probes.ts';
import { BUILD } from '../build-info.ts';

const TEXT = { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' };

/** Probes and metrics are read-only: other methods answer 405. */
const getOnly =
  (handler: RouteHandler): RouteHandler =>
  async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return handler(request);
    throw new HttpProblem('METHOD_NOT_ALLOWED', 'This path is read-only: use GET.', {
      headers: { Allow: 'GET, HEAD' },
    });
  };

/** GET /livez: the process answers. */
export const livez: RouteHandler = getOnly(async () => ({ status: 200, headers: TEXT, body: 'ok\n' }));

/** GET /readyz: 200 when every check passes, 503 with the failing ones otherwise. */
export const readyz = (readiness: Readiness): RouteHandler =>
  getOnly(async () => {
    const state = await readiness.state();
    const body = JSON.stringify({
      status: state.ready ? 'ready' : 'not ready',
      version: BUILD.version,
      commit: BUILD.commit,
      checks: state.checks,
    });
    return {
      status: state.ready ? 200 : 503,
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' },
      body,
    };
  });

/** GET /metrics in Prometheus text; behind `Authorization: Bearer <token>` when a token is given. */
export const metricsRoute = (metrics: Metrics, token?: string): RouteHandler =>
  getOnly(async (request) => {
    if (token && !bearerMatches(request, token))
      throw new HttpProblem('METRICS_TOKEN_REQUIRED', 'Send Authorization: Bearer <METRICS_TOKEN>.');
    const { contentType, body } = await metrics.scrape();
    return { status: 200, headers: { 'Content-Type': contentType, 'Cache-Control': 'no-store' }, body };
  });
