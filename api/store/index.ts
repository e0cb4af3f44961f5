export * from './types.ts';
export * from './errors.ts';
export * from './embedded.ts';
export { encodeCursor, decodeCursor } from './pages.ts';
