import type { EventEmitter } from 'node:events';

/** How long to wait, how often to look, and what counts as done. */
export interface WaitOptions<T> {
  /** Whether an answer is the one awaited (by default: any truthy answer). */
  until?: (answer: T) => boolean;
  /** Give up after this long (5 s by default: every wait here is for something that takes milliseconds). */
  timeoutMs?: number;
  /** Pause between looks (25 ms by default); only for states the server exposes by being asked. */
  intervalMs?: number;
  /** What is awaited, for the failure message. */
  what?: string;
}

/**
 * Asks `check` until its answer passes `until` (or is truthy) and resolves with that answer; fails
 * with a message that names what was awaited and the last answer (or error) once the deadline
 * passes. For a state that can only be observed by asking (a document, a counter); where an event
 * exists, await the event instead.
 */
export async function waitFor<T>(check: () => T | Promise<T>, options: WaitOptions<T> = {}): Promise<T> {
  const { until = (answer: T) => Boolean(answer), timeoutMs = 5000, intervalMs = 25, what = 'condition' } = options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const answer = await check();
      last = answer;
      if (until(answer)) return answer;
    } catch (error) {
      last = error;
    }
    if (Date.now() >= deadline)
      throw new Error(`waitFor: ${what} not met within ${timeoutMs} ms; last answer: ${describe(last)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function describe(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return (JSON.stringify(value) ?? String(value)).slice(0, 300);
  } catch {
    return String(value);
  }
}

/**
 * Resolves once `emitter` emits `event` and `match` accepts its arguments, or fails after
 * `timeoutMs`: for events a test can listen to directly (sockets, in-process servers).
 */
export function nextEvent<A extends unknown[] = unknown[]>(
  emitter: EventEmitter,
  event: string,
  options: { match?: (...args: A) => boolean; timeoutMs?: number } = {},
): Promise<A> {
  const { match = () => true, timeoutMs = 5000 } = options;
  return new Promise((resolve, reject) => {
    const listener = (...received: unknown[]) => {
      const args = received as A;
      if (!match(...args)) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(args);
    };
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`nextEvent: no matching '${event}' within ${timeoutMs} ms`));
    }, timeoutMs);
    emitter.on(event, listener);
  });
}
