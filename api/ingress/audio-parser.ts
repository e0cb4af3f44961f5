import { Worker } from 'node:worker_threads';
import { DomainError } from '../problems/domain.ts';
import type { ProblemCode } from '../problems/table.ts';

/** What a worker is asked to read: an upload the gateway streamed to a file. */
export interface ParseJob {
  path: string;
  size: number;
  mimeType: string;
  maxElements: number;
}
/** What it answers: the metadata, a refusal in the domain's words, or a failure of its own. */
export type ParseOutcome =
  | { metadata: Record<string, unknown> }
  | { refused: { code: ProblemCode; detail: string; extra: Record<string, unknown> } }
  | { failed: string };

export interface AudioParseLimits {
  /** Parse threads (AUDIO_PARSE_WORKERS): at most this many cores parse uploads at once. */
  workers: number;
  /** Parses that may wait for a thread; more are refused 503 (the upload slots keep it from filling). */
  queue: number;
  /** CPU one parse may spend (AUDIO_PARSE_CPU_MS); past it its thread is ended and the upload refused. */
  cpuMs: number;
  /** Container elements a file may hold (AUDIO_MAX_ELEMENTS), counted before the parse. */
  maxElements: number;
}

/** Why a parse thread was ended before it answered; logged with the CPU it had spent. */
export interface ParseStopped {
  reason: 'cpu budget' | 'wall budget' | 'client closed' | 'worker failed';
  cpuMs: number;
}

export interface AudioParser {
  /** The file's tags and duration, read on a parse thread; ends that parse when `signal` aborts. */
  read(job: Omit<ParseJob, 'maxElements'>, signal?: AbortSignal): Promise<Record<string, unknown>>;
  /** Ends every thread (at shutdown). */
  close(): Promise<void>;
}

// How often a running parse's CPU is read: the overshoot past the budget is at most about this.
const CHECK_EVERY_MS = 20;
// A parse waiting on a starved machine gets this many times its CPU budget of wall time, then ends all the same.
const WALL_FACTOR = 20;

const tooComplex = (detail: string, limit: number) =>
  new DomainError('AUDIO_TOO_COMPLEX', detail, { extra: { limit } });

/**
 * A small pool of parse threads (node:worker_threads) for uploaded audio: each parse runs off the
 * event loop, under a CPU budget read from its thread, and is ended (the thread terminated) the
 * moment its client goes. A thread ended is replaced at the next parse.
 */
export function createAudioParser(
  limits: AudioParseLimits,
  onStop: (stopped: ParseStopped) => void = () => {},
): AudioParser {
  interface Waiting {
    job: ParseJob;
    signal: AbortSignal | undefined;
    resolve: (metadata: Record<string, unknown>) => void;
    reject: (error: unknown) => void;
  }
  const idle: Worker[] = [];
  const all = new Set<Worker>();
  const queue: Waiting[] = [];
  let running = 0;
  let closed = false;

  const spawn = () => {
    const worker = new Worker(new URL('./audio-worker.ts', import.meta.url), {
      // A parse that grows past this is ended by V8 (a crafted size field asks for a huge buffer).
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    worker.unref();
    all.add(worker);
    worker.once('exit', () => all.delete(worker));
    return worker;
  };

  const next = () => {
    while (!closed && running < limits.workers && queue.length > 0) {
      const waiting = queue.shift()!;
      if (waiting.signal?.aborted) continue;
      running++;
      void run(idle.pop() ?? spawn(), waiting).finally(() => {
        running--;
        next();
      });
    }
  };

  async function run(worker: Worker, { job, signal, resolve, reject }: Waiting): Promise<void> {
    const started = await worker.cpuUsage().catch(() => ({ user: 0, system: 0 }));
    const spent = async () => {
      const now = await worker.cpuUsage().catch(() => started);
      return (now.user - started.user + now.system - started.system) / 1000;
    };
    const wallLimit = performance.now() + limits.cpuMs * WALL_FACTOR;
    await new Promise<void>((done) => {
      let settled = false;
      const finish = (reuse: boolean, settle: () => void) => {
        if (settled) return;
        settled = true;
        clearInterval(timer);
        signal?.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        if (reuse && !closed) idle.push(worker);
        else void worker.terminate();
        settle();
        done();
      };
      const stop = (reason: ParseStopped['reason'], error: unknown) =>
        void spent().then((cpuMs) => {
          if (settled) return;
          onStop({ reason, cpuMs: Math.round(cpuMs) });
          finish(false, () => reject(error));
        });
      const onMessage = (outcome: ParseOutcome) =>
        finish(true, () => {
          if ('metadata' in outcome) resolve(outcome.metadata);
          else if ('refused' in outcome)
            reject(new DomainError(outcome.refused.code, outcome.refused.detail, { extra: outcome.refused.extra }));
          else reject(new Error(`The audio parse failed: ${outcome.failed}`));
        });
      const onError = (error: Error) => {
        // Out of memory (the resource limit) is the file's doing; anything else is the server's.
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ERR_WORKER_OUT_OF_MEMORY')
          stop(
            'worker failed',
            tooComplex('Reading the audio file needs more memory than one upload is given.', limits.cpuMs),
          );
        else stop('worker failed', error);
      };
      const onAbort = () => {
        // The client went: the thread is ended now (its CPU read first, for the log), not at its next check.
        stop('client closed', signal!.reason ?? new Error('The client closed the request.'));
      };
      const timer = setInterval(() => {
        void spent().then((cpuMs) => {
          if (cpuMs > limits.cpuMs)
            stop(
              'cpu budget',
              tooComplex(
                `Reading the audio file took more than ${limits.cpuMs} ms of CPU, the most one upload is given: ` +
                  'a real recording reads in far less. Send the file as an encoder wrote it.',
                limits.cpuMs,
              ),
            );
          else if (performance.now() > wallLimit)
            stop(
              'wall budget',
              new DomainError('UPLOADS_BUSY', 'The server is too busy to read the audio file now. Try again shortly.'),
            );
        });
      }, CHECK_EVERY_MS);
      worker.on('message', onMessage);
      worker.on('error', onError);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) return onAbort();
      worker.postMessage(job);
    });
  }

  return {
    read(file, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (queue.length >= limits.queue)
        return Promise.reject(
          new DomainError(
            'UPLOADS_BUSY',
            `The server has ${queue.length} audio files waiting to be read. Try again shortly.`,
          ),
        );
      return new Promise((resolve, reject) => {
        const waiting: Waiting = { job: { ...file, maxElements: limits.maxElements }, signal, resolve, reject };
        queue.push(waiting);
        // A client that leaves while its parse waits is taken out of the queue.
        signal?.addEventListener(
          'abort',
          () => {
            const at = queue.indexOf(waiting);
            if (at !== -1) {
              queue.splice(at, 1);
              reject(signal.reason);
            }
          },
          { once: true },
        );
        next();
      });
    },
    async close() {
      closed = true;
      await Promise.all([...all].map((worker) => worker.terminate()));
    },
  };
}
