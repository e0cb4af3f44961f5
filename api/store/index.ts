export * from './types.ts';
export * from './errors.ts';
export * from './embedded/embedded-store.ts';
export { encodeCursor, decodeCursor } from './pages.ts';
export { readSnapshot, SNAPSHOT_FILE, LEGACY_SNAPSHOT_FILE } from './embedded/snapshot.ts';
