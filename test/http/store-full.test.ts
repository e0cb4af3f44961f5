import { describe, expect, it } from 'vitest';
import { startServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const oath = (url: string, name: string) =>
  fetch(`${url}/api/citizenship/oath`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, purpose: 'fill the store' }),
  });
/** How many citizens the list pages give. */
async function listed(url: string): Promise<number> {
  let n = 0;
  for (let cursor = ''; ;) {
    const page = (await (await fetch(`${url}/api/citizens?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).json()) as {
      citizens: unknown[];
      nextCursor: string | null;
    };
    n += page.citizens.length;
    if (!page.nextCursor) return n;
    cursor = page.nextCursor;
  }
}
const ceiling = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, check: ((await res.json()) as { checks: Record<string, string> }).checks.ceiling! };
};

describe('the embedded store at its ceiling (EMBEDDED_MAX_BYTES)', () => {
  it('answers writes 503 STORE_FULL with the way out, keeps reads, warns on /readyz and in the log, and starts again', async () => {
    const env = { WRITE_RATE_LIMIT: '0', EMBEDDED_MAX_BYTES: '60000' };
    const server = await startServer(env);
    expect(await ceiling(server.url)).toEqual({ status: 200, check: 'ok' });
    let accepted = 0;
    let refused: Response | undefined;
    for (let i = 0; i < 1000 && !refused; i++) {
      const res = await oath(server.url, `citizen-${i}`);
      if (res.status === 201) accepted++;
      else refused = res;
      await res.arrayBuffer().catch(() => undefined);
    }
    expect(accepted).toBeGreaterThan(20);
    expect(refused!.status).toBe(503);
    expect(refused!.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await fetch(`${server.url}/api/intelligence/message`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'late', message: 'hello' }),
    }).then((r) => {
      expect(r.status).toBe(503);
      return r.json();
    })) as { code: string; detail: string; status: number };
    expect(problem.code).toBe('STORE_FULL');
    expect(problem.detail).toMatch(/PostgreSQL/);
    expect(problem.detail).toMatch(/DATABASE_URL/);
    // Reads go on; readiness stays (reads are served) and says the store is full.
    expect(await listed(server.url)).toBe(accepted);
    // /readyz runs its checks at most once a second: the 'ok' it gave at the start may still be served.
    const full = await waitFor(() => ceiling(server.url), {
      until: (r) => r.check !== 'ok',
      what: '/readyz past its cached answer',
    });
    expect(full.status).toBe(200);
    expect(full.check).toMatch(/^full: .*STORE_FULL.*PostgreSQL/);
    await server.waitForLog((l) => l.includes('store near its ceiling'));
    await server.waitForLog((l) => l.includes('"msg":"store full'));
    await server.stop();

    // The state it stopped at starts again, as full as it was.
    const again = await startServer({ ...env, DATA_DIR: server.dataDir });
    expect(await listed(again.url)).toBe(accepted);
    expect((await oath(again.url, 'still-full')).status).toBe(503);
    const bytes = Number(/\((\d+) of \d+ bytes\)/.exec((await ceiling(again.url)).check)![1]);
    await again.stop();

    // Just under a ceiling: writes go in, and /readyz warns while staying ready.
    const near = await startServer({
      ...env,
      DATA_DIR: server.dataDir,
      EMBEDDED_MAX_BYTES: String(Math.floor(bytes / 0.95)),
    });
    const warning = await ceiling(near.url);
    expect(warning.status).toBe(200);
    expect(warning.check).toMatch(/^warning: 9\d% of EMBEDDED_MAX_BYTES.*PostgreSQL/);
    expect((await oath(near.url, 'one-more')).status).toBe(201);
    expect(await listed(near.url)).toBe(accepted + 1);
    await near.stop();
  }, 60_000);
});
