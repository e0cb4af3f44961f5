import { AsyncLocalStorage } from 'node:async_hooks';
// Types only: erased at run time, so nothing of OpenTelemetry is loaded unless tracing starts.
import type { Span, Tracer } from '@opentelemetry/api';
import { BUILD } from './build-info.ts';

/**
 * OpenTelemetry traces, only when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set:
 * then the SDK and the OTLP/HTTP exporter are imported (dynamically) and read the standard
 * OTEL_* variables themselves (headers, timeout, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
 * Otherwise nothing is imported, nothing is sent, and `span` runs its work as it is.
 */
let tracer: Tracer | undefined;
let shutdown: (() => Promise<void>) | undefined;
let setParent: ((span: Span) => unknown) | undefined;
/** The span under way: a child started within it is its child (the request's, then the store call's). */
const current = new AsyncLocalStorage<Span>();

export const tracingEnabled = (): boolean => tracer !== undefined;

/** Starts tracing when the environment asks for it; true when it did. */
export async function startTracing(env: Record<string, string | undefined> = process.env): Promise<boolean> {
  if (tracer) return true;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return false;
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  const [otel, sdk, exporter, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new sdk.BasicTracerProvider({
    resource: resources
      .resourceFromAttributes({ 'service.name': 'agent-node', 'service.version': BUILD.version })
      .merge(resources.detectResources({ detectors: [resources.envDetector] })),
    spanProcessors: [new sdk.BatchSpanProcessor(new exporter.OTLPTraceExporter())],
  });
  tracer = provider.getTracer('agent-node', BUILD.version);
  setParent = (span) => otel.trace.setSpan(otel.context.active(), span);
  shutdown = () => provider.shutdown();
  return true;
}

/** Sends what is left and stops (at the process's end). */
export async function stopTracing(): Promise<void> {
  await shutdown?.();
  tracer = undefined;
  shutdown = undefined;
}

type Attributes = Record<string, string | number | boolean>;

/** A span for a request: ended by the caller (when the answer is sent); `work` runs within it. */
export function requestSpan<T>(name: string, attributes: Attributes, work: (span: Span | undefined) => T): T {
  if (!tracer) return work(undefined);
  const span = tracer.startSpan(name, { kind: 1 /* SERVER */, attributes });
  return current.run(span, () => work(span));
}

/** `work` within a child span of the one under way (`kind` 3: a client call, such as a query). */
export async function span<T>(name: string, attributes: Attributes, work: () => Promise<T>, kind = 0): Promise<T> {
  if (!tracer) return work();
  const parent = current.getStore();
  const child = tracer.startSpan(name, { kind, attributes }, parent ? (setParent!(parent) as never) : undefined);
  try {
    return await current.run(child, work);
  } catch (error) {
    child.setStatus({ code: 2, message: error instanceof Error ? error.name : 'error' });
    throw error;
  } finally {
    child.end();
  }
}

/** Wraps, in place, every method of a store's parts (`citizens.add`...) in a span `store.citizens.add`. */
export function traceStore(store: object): void {
  if (!tracer) return;
  for (const [part, methods] of Object.entries(store)) {
    if (typeof methods !== 'object' || methods === null) continue;
    for (const [name, method] of Object.entries(methods)) {
      if (typeof method !== 'function') continue;
      (methods as Record<string, unknown>)[name] = (...args: unknown[]) =>
        span(`store.${part}.${name}`, {}, async () => (method as (...a: unknown[]) => unknown).apply(methods, args));
    }
  }
}
