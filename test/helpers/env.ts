import { resolve } from 'node:path';

/** The build every integration test serves, made once per run by the global setup. */
export const TEST_DIST = resolve('test-results/dist');
/** The port of the servers whose documents must carry their own address (one-shot flows). */
// TEST_FLOW_PORT lets two checkouts run their suites side by side.
export const FLOW_PORT = Number(process.env.TEST_FLOW_PORT ?? 4391);
export const FLOW_SITE_URL = `http://127.0.0.1:${FLOW_PORT}`;
export const CANON_URL = 'https://canon.test.example';
