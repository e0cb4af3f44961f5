import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON lines on stdout (flush before exit). Secrets never reach it: callers log chosen fields, never a request or a body. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
    },
    // Asynchronous: lines written while a write is in flight are joined into the next one.
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
