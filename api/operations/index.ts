export * from './operation.ts';
export * from './table.ts';
export * from './paths.ts';
export * from './dispatch.ts';
export * from './invoke.ts';
export type { OperationContext } from './context.ts';
