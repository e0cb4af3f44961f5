import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON lines on stdout. Secrets never reach it: fields are chosen, never dumped. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: ['passportNumber', '*.passportNumber', 'authorization', '*.authorization', 'headers.authorization'], censor: '[secret]' },
    },
    destination ?? process.stdout,
  );
}
