import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { tempFolders } from '../helpers/temp.ts';
import { createLogging } from '../../api/log.ts';
import { openEmbeddedStore } from '../../api/store/embedded/embedded-store.ts';
import { journalFiles } from '../../api/store/embedded/journal.ts';
import { run } from '../helpers/run.ts';
import { citizen, message } from './contract.ts';

// store-salvage rewrites the folder it is given: it must refuse one that holds no store (as
// store-check does), and what it writes (damaged bytes, the report) is 0600 whatever the umask.

const { logger } = createLogging('silent', new Writable({ write: (_c, _e, cb) => cb() }));
const fresh = tempFolders('salvage-folder-');
const node = 'node_modules/.bin/node';
/** A store tool run under umask 022, as a shell usually has it. */
const tool = (name: string, dir: string) => run('sh', ['-c', `umask 022 && exec ${node} api/cli/${name}.ts "$0"`, dir]);
const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('store-salvage', () => {
  it('refuses a folder that holds no embedded store, as store-check does, and changes nothing in it', async () => {
    const dir = join(fresh(), 'site');
    mkdirSync(dir, { mode: 0o755 });
    writeFileSync(join(dir, 'index.html'), 'hello\n');
    const check = await tool('store-check', dir);
    const salvage = await tool('store-salvage', dir);
    expect(check.status).toBe(2);
    expect(salvage.status, salvage.stdout).toBe(2);
    expect(salvage.stderr).toContain(`store-salvage: ${dir} holds no embedded store (no snapshot, no journal)`);
    expect(check.stderr).toContain(`store-check: ${dir} holds no embedded store (no snapshot, no journal)`);
    expect(salvage.stdout).toBe('');
    expect(readdirSync(dir)).toEqual(['index.html']);
    expect(modeOf(dir)).toBe(0o755);
  });

  it('writes the damaged bytes and its report 0600 under umask 022, and narrows a .damaged file left wider', async () => {
    const dir = fresh();
    const store = await openEmbeddedStore({ dir, logger });
    for (const name of ['first-oath', 'second-oath'])
      await store.citizens.add(citizen({ name }), message({ name, wall: true }));
    await store.close();
    const file = journalFiles(readdirSync(dir))
      .map((f) => join(dir, f))
      .find((f) => readFileSync(f).includes('"second-oath"'))!;
    // One letter of the last oath changed: damage the salvage moves aside.
    const text = readFileSync(file, 'latin1');
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.from('T'), 0, 1, text.lastIndexOf('"purpose":"') + 11);
    closeSync(fd);
    // An earlier salvage (before this fix) left its copy readable by all.
    writeFileSync(`${file}.damaged`, '', { mode: 0o644 });

    const salvage = await tool('store-salvage', dir);
    expect(salvage.status, salvage.stderr).toBe(0);
    expect(readFileSync(`${file}.damaged`, 'latin1')).toContain('"second-oath"');
    const report = readdirSync(dir).find((f) => /^salvage-.*\.txt$/.test(f))!;
    expect(report).toBeDefined();
    expect({ damaged: modeOf(`${file}.damaged`), report: modeOf(join(dir, report)) }).toEqual({
      damaged: 0o600,
      report: 0o600,
    });
  });
});
