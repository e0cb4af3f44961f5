export * from './table.ts';
export * from './domain.ts';
