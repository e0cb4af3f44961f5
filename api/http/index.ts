export * from './problem.ts';
export * from './json-body.ts';
export * from './rate-limit.ts';
export * from './idempotency.ts';
export * from './route.ts';
export * from './router.ts';
export * from './bearer.ts';
