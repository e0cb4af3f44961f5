export * from './metrics.ts';
export * from './probes.ts';
export * from './routes.ts';
export * from './operations.ts';
export * from './metrics-server.ts';
export * from '../build-info.ts';
