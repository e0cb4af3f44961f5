export * from './gateway.ts';
export * from './body.ts';
export * from './static-site.ts';
export * from './upload-files.ts';
