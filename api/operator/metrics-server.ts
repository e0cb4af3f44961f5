import { createServer, type Server } from 'node:http';
import { HttpProblem, isHttpProblem } from '../http/problem.ts';
import type { RouteHandler } from '../http/route.ts';
import { listenRefusal } from '../startup-error.ts';

/** A port that serves only GET /metrics (METRICS_PORT), for a scraper on a private network. */
export async function startMetricsServer(
  port: number,
  host: string,
  route: RouteHandler,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics')
      return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('only /metrics is served here\n');
    route({
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      headers: req.headers,
      body: new Uint8Array(),
      client: req.socket.remoteAddress ?? '',
    }).then(
      (answer) => res.writeHead(answer.status, answer.headers).end(answer.body),
      (error: unknown) => {
        const answer = (
          isHttpProblem(error) ? error : new HttpProblem('INTERNAL', 'The metrics could not be read.')
        ).toAnswer('/metrics');
        res.writeHead(answer.status, answer.headers).end(answer.body);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  }).catch((error: NodeJS.ErrnoException) => {
    throw listenRefusal(error, 'METRICS_PORT', port, host) ?? error;
  });
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}/metrics` };
}
