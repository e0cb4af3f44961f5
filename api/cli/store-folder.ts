import { readdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';

/** How a store tool ends with a message: on stderr, named after the tool, with its exit code. */
export type Fail = (message: string, code: number) => never;

/** The DATA_DIR a store tool was given (its first argument), a folder; otherwise the tool exits 2 with its usage. */
export async function storeFolderArg(tool: string, usage: string): Promise<{ dir: string; fail: Fail }> {
  const fail: Fail = (message, code) => {
    process.stderr.write(`${tool}: ${message}\n`);
    process.exit(code);
  };
  const arg = process.argv[2];
  if (!arg || arg.startsWith('-')) fail(usage, 2);
  const dir = resolve(arg!);
  const isFolder = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isFolder) fail(`${dir} is not a folder\n${usage}`, 2);
  return { dir, fail };
}

/** Whether a folder holds an embedded store's files: a snapshot or a journal (what store-check looks for). */
export async function holdsEmbeddedStore(dir: string): Promise<boolean> {
  const names = await readdir(dir);
  return names.some((name) => /^(journal-\d+|snapshot(-\d+)?)\.jsonl$|^snapshot\.json$/.test(name));
}
