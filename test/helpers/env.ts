import { resolve } from 'node:path';

/** The build every integration test serves, made once per run by the global setup. */
export const TEST_DIST = resolve('test-results/dist');
/**
 * The SITE_URL the test build is made with, on a port no test binds: servers under it serve the
 * documents as built; a test whose links must be followed takes an address of its own
 * (`ownAddress()` in server.ts) and the server rewrites them.
 */
const FLOW_PORT = Number(process.env.TEST_FLOW_PORT ?? 4391);
export const FLOW_SITE_URL = `http://127.0.0.1:${FLOW_PORT}`;
export const CANON_URL = 'https://canon.test.example';
