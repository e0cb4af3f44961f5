import { normalisePath } from '../gateway/static-site.ts';
import { matchOperation } from '../operations/paths.ts';

/**
 * The operation a request belongs to, for metric labels: the id of its declaration in the
 * operation table (pages and documents too), `document` for other prebuilt files, the probes by
 * name, else `other`. A bounded set, whatever paths clients send.
 */
export function operationNamer(
  isDocument: (path: string) => boolean,
  named: Record<string, string> = {},
): (method: string, rawPath: string) => string {
  return (method, rawPath) => {
    const path = normalisePath(rawPath);
    if (path === null) return 'other';
    const found = named[path] === undefined ? matchOperation(method, path) : undefined;
    return named[path] ?? (found && 'handler' in found ? found.handler.id : isDocument(path) ? 'document' : 'other');
  };
}
