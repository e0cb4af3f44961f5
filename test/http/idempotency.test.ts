import { describe, expect, it } from 'vitest';
import { createIdempotency } from '../../api/http/idempotency.ts';
import { openMemoryStore } from '../../api/store/index.ts';

const body = new TextEncoder().encode('{"name":"x"}');

describe('Idempotency-Key rules', () => {
  it('answers 409 while the first request with the key is still running, then replays it', async () => {
    const idempotency = createIdempotency(openMemoryStore().idempotency);
    let finish!: () => void;
    const first = idempotency('oath', 'k', body, () => new Promise((resolve) => (finish = () => resolve({ status: 201, body: { n: 1 } }))));
    await new Promise((r) => setTimeout(r, 0));
    await expect(idempotency('oath', 'k', body, async () => ({ status: 201, body: { n: 2 } }))).rejects.toMatchObject({ status: 409, code: 'IDEMPOTENCY_IN_FLIGHT' });
    finish();
    expect(await first).toEqual({ status: 201, body: { n: 1 }, replayed: false });
    expect(await idempotency('oath', 'k', body, async () => ({ status: 201, body: { n: 3 } }))).toEqual({ status: 201, body: { n: 1 }, replayed: true });
  });

  it('lets a retry run when the first run failed', async () => {
    const idempotency = createIdempotency(openMemoryStore().idempotency);
    await expect(idempotency('oath', 'k', body, async () => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full');
    expect(await idempotency('oath', 'k', body, async () => ({ status: 201, body: { n: 2 } }))).toEqual({ status: 201, body: { n: 2 }, replayed: false });
  });

  it('keeps routes apart, refuses another body and malformed keys', async () => {
    const idempotency = createIdempotency(openMemoryStore().idempotency);
    await idempotency('oath', 'k', body, async () => ({ status: 201, body: 'oath' }));
    expect((await idempotency('message', 'k', body, async () => ({ status: 201, body: 'message' }))).body).toBe('message');
    await expect(idempotency('oath', 'k', new TextEncoder().encode('{}'), async () => ({ status: 201, body: 0 }))).rejects.toMatchObject({ status: 422, code: 'IDEMPOTENCY_KEY_REUSED' });
    await expect(idempotency('oath', 'has space', body, async () => ({ status: 201, body: 0 }))).rejects.toMatchObject({ status: 400 });
  });

  it('stores the answer sealed: the passport cannot be read from the store', async () => {
    const store = openMemoryStore();
    const idempotency = createIdempotency(store.idempotency);
    await idempotency('oath', 'secret-key', body, async () => ({ status: 201, body: { passportNumber: 'pp_topsecret' } }));
    const { createHash } = await import('node:crypto');
    const record = await store.idempotency.get(createHash('sha256').update('oath\nsecret-key').digest('hex'), new Date());
    expect(record).not.toBeNull();
    expect(JSON.stringify(record)).not.toContain('pp_topsecret');
    expect(JSON.stringify(record)).not.toContain('secret-key');
  });
});
