/** A start that cannot go on, for a reason one line tells the operator: printed without a stack. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
