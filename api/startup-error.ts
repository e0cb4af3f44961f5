/** A start that cannot go on, for a reason one line tells the operator: printed without a stack. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** The first line of an error's message, for a one-line refusal (some messages carry a code snippet below). */
export const firstLine = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).split('\n')[0]!.trim();

/**
 * A port that cannot be listened on, for the reasons the operator's settings cause (the port is
 * taken or privileged, HOST is no address of this machine), said naming the variable to change;
 * null for any other error, which stays an error with its stack.
 */
export function listenRefusal(
  error: NodeJS.ErrnoException,
  variable: 'PORT' | 'METRICS_PORT',
  port: number,
  host: string,
): StartupError | null {
  const what = variable === 'PORT' ? 'port' : 'METRICS_PORT';
  switch (error.code) {
    case 'EADDRINUSE':
      return new StartupError(
        `${what} ${port} on ${host} is in use by another process: pick another with ${variable}=${port + 1} npm start`,
      );
    case 'EACCES':
      return new StartupError(
        `${what} ${port} on ${host} needs privileges this process does not have: pick one above 1023 with ${variable}=`,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
    case 'EADDRNOTAVAIL':
      return new StartupError(
        `HOST ${host} is not a name or address this machine can listen on (${error.code}): set HOST to one of its addresses, 0.0.0.0 (all of them) or 127.0.0.1`,
      );
    default:
      return null;
  }
}
