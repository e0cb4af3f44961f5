import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { span, startTracing, tracingEnabled } from '../../api/tracing.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const available = await postgresAvailable();

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

describe('tracing off', () => {
  it('starts nothing without OTEL_EXPORTER_OTLP_ENDPOINT, and a span is just its work', async () => {
    expect(await startTracing({ OTEL_SERVICE_NAME: 'x' })).toBe(false);
    expect(tracingEnabled()).toBe(false);
    expect(await span('nothing', {}, async () => 42)).toBe(42);
  });
});

describe.runIf(available)('tracing on, to a loopback OTLP/HTTP receiver', () => {
  let receiver: Server;
  const spans: OtlpSpan[] = [];
  const resources: unknown[] = [];
  let server: ServerProcess;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        if (req.url === '/v1/traces' && /json/.test(req.headers['content-type'] ?? '')) {
          const sent = JSON.parse(body) as {
            resourceSpans: { resource: unknown; scopeSpans: { spans: OtlpSpan[] }[] }[];
          };
          for (const r of sent.resourceSpans) {
            resources.push(r.resource);
            for (const s of r.scopeSpans) spans.push(...s.spans);
          }
        }
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    server = await startServerProcess({
      DATABASE_URL: await freshDatabase(),
      WRITE_RATE_LIMIT: '1000000',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'agent-node-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
    await dropDatabases();
  });

  it('sends a span for the request, its store calls and their PostgreSQL queries, in one trace', async () => {
    const id = `trace-${randomUUID()}`;
    const r = await fetch(`${server.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': id },
      body: JSON.stringify({ name: `traced-${randomUUID()}`, purpose: 'Leave a trace.' }),
    });
    expect(r.status).toBe(201);
    const request = await waitFor(
      () => spans.find((s) => s.attributes.some((a) => a.key === 'http.request.id' && a.value.stringValue === id)),
      { timeoutMs: 10_000, what: 'the request span' },
    );
    expect(request!.name).toBe('HTTP POST');
    /** Whether `s` descends from `ancestor` in the trace. */
    const under = (s: OtlpSpan, ancestor: OtlpSpan): boolean => {
      for (let p = s.parentSpanId; p; p = spans.find((x) => x.spanId === p)?.parentSpanId)
        if (p === ancestor.spanId) return true;
      return false;
    };
    const inTrace = () => spans.filter((s) => s.traceId === request!.traceId);
    const add = await waitFor(() => inTrace().find((s) => s.name === 'store.citizens.add'), {
      timeoutMs: 10_000,
      what: 'the store span',
    });
    expect(under(add!, request!)).toBe(true);
    const insert = await waitFor(
      () =>
        inTrace().find(
          (s) =>
            s.name === 'pg.query' &&
            s.attributes.some(
              (a) => a.key === 'db.statement' && /INSERT INTO citizens/.test(String(a.value.stringValue)),
            ),
        ),
      { timeoutMs: 10_000, what: 'the INSERT span' },
    );
    expect(under(insert!, add!)).toBe(true);
    // The statement's text only: never a value (the oath's passport hash is one).
    expect(JSON.stringify(insert!.attributes)).not.toMatch(/traced-/);
    expect(JSON.stringify(resources)).toContain('agent-node-test');
  });
});
