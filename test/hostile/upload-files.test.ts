import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempFolders } from '../helpers/temp.ts';
import { ABANDONED_AFTER_MS, storageFault, sweepAbandonedUploads, uploadFile } from '../../api/gateway/upload-files.ts';
import { TEST_DIST } from '../helpers/env.ts';
import { runNode } from '../helpers/run.ts';
import { startServer } from '../helpers/server.ts';
import { wavWithInfo } from '../helpers/audio-files.ts';

// The disk: an upload's temporary file is removed after its answer, but a process
// killed mid-upload leaves it behind. What a killed process left is swept once nobody writes it.
const folder = tempFolders('agentnode-sweep-');

/** An upload file last written `ageMs` ago. */
function plant(dir: string, ageMs: number): string {
  const path = uploadFile(dir);
  writeFileSync(path, Buffer.alloc(1024));
  const when = new Date(Date.now() - ageMs);
  utimesSync(path, when, when);
  return path;
}

describe('upload files a killed process left', () => {
  it('removes those nobody wrote for ABANDONED_AFTER_MS, and nothing else', async () => {
    const dir = folder();
    const abandoned = plant(dir, ABANDONED_AFTER_MS + 60_000);
    const live = plant(dir, 1000);
    const other = join(dir, 'someone-elses-file');
    writeFileSync(other, 'x');
    utimesSync(other, new Date(0), new Date(0));
    expect(await sweepAbandonedUploads(dir)).toBe(1);
    expect([existsSync(abandoned), existsSync(live), existsSync(other)]).toEqual([false, true, true]);
    expect(await sweepAbandonedUploads(join(dir, 'missing'))).toBe(0);
  });

  it('are swept by the server when it starts', async () => {
    const dir = folder();
    const abandoned = [plant(dir, ABANDONED_AFTER_MS + 1000), plant(dir, 24 * 3600_000)];
    const live = plant(dir, 0);
    const server = await startServer({ DATA_DIR: ':memory:', UPLOAD_TMP_DIR: dir });
    try {
      const line = await server.waitForLog((l) => l.includes('abandoned upload files removed'));
      expect(JSON.parse(line).removed).toBe(2);
      expect(abandoned.some(existsSync)).toBe(false);
      expect(readdirSync(dir)).toEqual([live.slice(dir.length + 1)]);
    } finally {
      await server.stop();
    }
  });
});

describe('an upload folder that refuses the file', () => {
  const upload = (url: string) =>
    fetch(`${url}/api/ingress/audio`, {
      method: 'POST',
      headers: { 'Content-Type': 'audio/wav' },
      body: new Uint8Array(wavWithInfo({ title: 'Folder gone' }, 1)),
    });

  it('answers 503 UPLOAD_STORAGE_UNAVAILABLE with Retry-After, logs one line without a stack, and serves on', async () => {
    const dir = folder();
    const server = await startServer({ DATA_DIR: ':memory:', UPLOAD_TMP_DIR: dir });
    try {
      rmSync(dir, { recursive: true });
      const from = server.logs.length;
      const refused = await upload(server.url);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(refused.headers.get('retry-after')).toBe('30');
      expect((await refused.json()).code).toBe('UPLOAD_STORAGE_UNAVAILABLE');
      const line = JSON.parse(await server.waitForLog((l) => l.includes('upload refused'), { from }));
      expect(line).toMatchObject({ level: 40, code: 'ENOENT', folder: dir });
      expect(line.err).toBeUndefined();
      await server.waitForLog((l) => l.includes('"path":"/api/ingress/audio"'), { from });
      const said = server.logs.slice(from).join('\n');
      expect(said).not.toContain('"level":50');
      expect(said).not.toContain('"stack"');
      // Still up, and uploads work again once the folder is back.
      expect((await fetch(`${server.url}/livez`)).status).toBe(200);
      mkdirSync(dir);
      expect((await upload(server.url)).status).toBe(201);
    } finally {
      await server.stop();
    }
  });

  it('tells the full, over-quota, read-only, gone and forbidden folder from other errors', () => {
    const errno = (code: string) => Object.assign(new Error(code), { code });
    for (const code of ['ENOSPC', 'EDQUOT', 'EROFS', 'ENOENT', 'ENOTDIR', 'EACCES', 'EPERM'])
      expect(storageFault(errno(code))).toBe(code);
    for (const other of [errno('EBADF'), new Error('bug'), undefined, 'ENOSPC'])
      expect(storageFault(other)).toBeUndefined();
  });

  it('stops the start in one line when UPLOAD_TMP_DIR is missing or no folder', async () => {
    const base = folder();
    const file = join(base, 'a-file');
    writeFileSync(file, '');
    for (const [dir, code] of [
      [join(base, 'missing'), 'ENOENT'],
      [file, 'ENOTDIR'],
    ] as const) {
      const started = await runNode(['api/main.ts'], {
        HOST: '127.0.0.1',
        PORT: '0',
        DIST_DIR: TEST_DIST,
        DATA_DIR: ':memory:',
        UPLOAD_TMP_DIR: dir,
      });
      expect(started.code).toBe(1);
      expect(started.lines).toEqual([
        `agent-node cannot start: UPLOAD_TMP_DIR ${dir} cannot hold upload files (${code}): create it, writable by this user, or name another folder`,
      ]);
    }
  });
});
