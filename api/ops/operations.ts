import { normalisePath } from '../gateway/static-site.ts';
import { createRouter } from '../http/router.ts';
import type { AnyOperation } from '../operations/operation.ts';
import { OPERATIONS } from '../operations/table.ts';

/**
 * The operation a request belongs to, for metric labels: the id of its declaration in the
 * operation table (pages and documents too), `document` for other prebuilt files, the probes by
 * name, else `other`. A bounded set, whatever paths clients send.
 */
export function operationNamer(isDocument: (path: string) => boolean, named: Record<string, string> = {}): (method: string, rawPath: string) => string {
  const router = createRouter((OPERATIONS as readonly AnyOperation[]).map((op) => ({ method: op.method, path: op.path, handler: op.id })));
  return (method, rawPath) => {
    const path = normalisePath(rawPath);
    if (path === null) return 'other';
    const found = named[path] === undefined ? router.match(method, path) : undefined;
    return named[path] ?? (found && 'handler' in found ? found.handler : isDocument(path) ? 'document' : 'other');
  };
}
