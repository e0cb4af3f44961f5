export * from './a2a.ts';
export * from './task-store.ts';
