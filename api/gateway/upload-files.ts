import { randomUUID } from 'node:crypto';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// The temporary files uploads are streamed to. Each is removed when its answer is finished; a
// process killed (kill -9, out of memory) mid-upload cannot, so what it left is swept later.
const PREFIX = 'agentnode-upload-';

/**
 * A file nobody has written for this long belongs to no live upload: a live one is written at
 * least every BODY_IDLE_TIMEOUT_MS (or dropped with 408) and read back within seconds. The folder
 * may be shared by several processes, so the age, not the owner, decides.
 */
export const ABANDONED_AFTER_MS = 10 * 60_000;

/** A new upload file's path in `tmpDir`. */
export const uploadFile = (tmpDir: string): string => join(tmpDir, `${PREFIX}${randomUUID()}`);

/** Removes the upload files in `tmpDir` last written more than `olderThanMs` ago; returns how many. */
export async function sweepAbandonedUploads(
  tmpDir: string,
  olderThanMs = ABANDONED_AFTER_MS,
  now = Date.now(),
): Promise<number> {
  const names = (await readdir(tmpDir).catch(() => [])).filter((name) => name.startsWith(PREFIX));
  let removed = 0;
  for (const name of names) {
    const path = join(tmpDir, name);
    // Gone already (its upload ended meanwhile) or unreadable: nothing to sweep.
    const written = await stat(path).then(
      (s) => s.mtimeMs,
      () => now,
    );
    if (now - written <= olderThanMs) continue;
    await rm(path, { force: true });
    removed++;
  }
  return removed;
}

/**
 * The errors of a temporary file that say the folder's state (full, over quota, read-only, gone, not
 * ours), not a fault of this code: an upload meeting one is refused 503, never 500.
 */
const STORAGE_FAULTS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'ENOENT', 'ENOTDIR', 'EACCES', 'EPERM']);

/** The errno code of an upload folder's fault (`STORAGE_FAULTS`), or undefined for anything else. */
export function storageFault(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && STORAGE_FAULTS.has(code) ? code : undefined;
}

/** Writes and removes one upload file in `tmpDir`, as an upload would: throws what the folder refuses. */
export async function checkUploadFolder(tmpDir: string): Promise<void> {
  const probe = uploadFile(tmpDir);
  await writeFile(probe, '', { flag: 'wx', mode: 0o600 });
  await rm(probe, { force: true });
}
