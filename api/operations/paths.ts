import type { FunnelStep } from '../telemetry/ledger.ts';
import type { AnyOperation } from './operation.ts';
import { OPERATIONS, type OperationId } from './table.ts';

/** Every operation by id. */
export const OPERATION_BY_ID = Object.fromEntries(OPERATIONS.map((op) => [op.id, op])) as Record<OperationId, AnyOperation>;

/** The path of each operation, for documents that link to one: no path is written twice. */
export const PATH = Object.fromEntries(OPERATIONS.map((op) => [op.id, op.path])) as Record<OperationId, string>;

// By method, then path: counting runs on every crawler request, and building a `${method} ${path}`
// key for the lookup was a sixth of what counting one cost.
const FUNNEL = new Map<string, Map<string, FunnelStep>>();
for (const op of OPERATIONS) {
  if (!('funnel' in op) || !op.funnel) continue;
  const byPath = FUNNEL.get(op.method) ?? FUNNEL.set(op.method, new Map()).get(op.method)!;
  byPath.set(op.path, op.funnel);
}

/** The funnel step an answered request counts as (its operation's), or undefined. */
export const funnelStepOf = (method: string, path: string): FunnelStep | undefined => FUNNEL.get(method)?.get(path);

/** The gateway's body rules for a path: 'upload', 'ingest', or ordinary JSON. */
export function bodyLimitOf(path: string): 'json' | 'upload' | 'ingest' {
  const op = (OPERATIONS as readonly AnyOperation[]).find((o) => o.path === path && o.method === 'POST');
  return op?.bodyLimit ?? 'json';
}

/** The operations offered as tools, in the order every tool list shows them. */
export const TOOL_OPERATIONS = (OPERATIONS as readonly AnyOperation[]).filter((op) => op.tool).sort((a, b) => a.tool!.order - b.tool!.order);
