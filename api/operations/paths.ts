import { createRouter, type RouteMatch } from '../http/router.ts';
import type { FunnelStep } from '../telemetry/ledger/ledger.ts';
import type { AnyOperation } from './operation.ts';
import { OPERATIONS, type OperationId } from './table.ts';

/** Every operation by id. */
export const OPERATION_BY_ID = Object.fromEntries(OPERATIONS.map((op) => [op.id, op])) as Record<
  OperationId,
  AnyOperation
>;

/** The path of each operation, for documents that link to one: no path is written twice. */
export const PATH = Object.fromEntries(OPERATIONS.map((op) => [op.id, op.path])) as Record<OperationId, string>;

// Every operation, matched by method and path in this one place (path templates compiled once):
// the engine's lookup, body rules, funnel steps, metric names and in-process calls all read it.
const ROUTER = createRouter(
  (OPERATIONS as readonly AnyOperation[]).map((op) => ({ method: op.method, path: op.path, handler: op })),
);

/** The operation a method and path belong to with its raw path parameters, the methods the path takes, or undefined. */
export const matchOperation = (method: string, path: string): RouteMatch<AnyOperation> => ROUTER.match(method, path);

/** The funnel step an answered request counts as (its operation's), or undefined. */
export function funnelStepOf(method: string, path: string): FunnelStep | undefined {
  const found = ROUTER.match(method, path);
  return found && 'handler' in found ? found.handler.funnel : undefined;
}

/** The operations offered as tools, in the order every tool list shows them. */
export const TOOL_OPERATIONS = (OPERATIONS as readonly AnyOperation[])
  .filter((op) => op.tool)
  .sort((a, b) => a.tool!.order - b.tool!.order);
