import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ABANDONED_AFTER_MS, sweepAbandonedUploads, uploadFile } from '../../api/gateway/upload-files.ts';
import { startServer } from '../helpers/server.ts';

// The disk: an upload's temporary file is removed after its answer, but a process
// killed mid-upload leaves it behind. What a killed process left is swept once nobody writes it.
const folders: string[] = [];
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentnode-sweep-'));
  folders.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

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
