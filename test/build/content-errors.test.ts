import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContentError, loadContent, loadDoctrine } from '../../api/content/load.ts';

/** A copy of content/ with one file changed. */
function brokenContent(file: string, change: (text: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'content-'));
  cpSync('content', dir, { recursive: true });
  writeFileSync(join(dir, file), change(readFileSync(join(dir, file), 'utf8')));
  return dir;
}

describe('content validation', () => {
  it('loads and validates every content file as the engine reads it', async () => {
    const c = await loadContent('content');
    expect(c.track.n).toBe(12);
    expect(c.nodeProtocol.steps).toHaveLength(6);
    expect(c.constitution.omip.drift.window.steps).toBe(8);
    const note = await loadDoctrine('content', 'model-collapse-vs-constitutional-drift');
    expect(note.data.version).toBe('1.0.0');
  });

  it('names the file and the field of a broken entry', async () => {
    const dir = brokenContent('track.yaml', (t) => t.replace(/^title:.*$/m, ''));
    const error = await loadContent(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContentError);
    expect((error as ContentError).message).toMatch(/^track\.yaml: title: /);
  });

  it('fails the Astro build on a content entry missing a required field, naming file and field', () => {
    const dir = brokenContent('constitution.yaml', (t) => t.replace(/^ {6}epsilon_local: 0\.15$/m, ''));
    const result = spawnSync('node_modules/.bin/astro', ['build'], {
      env: { ...process.env, CONTENT_DIR: dir, DIST_DIR: join(dir, 'dist') },
      encoding: 'utf8',
      timeout: 120_000,
    });
    const output = result.stdout + result.stderr;
    expect(result.status).not.toBe(0);
    expect(output).toContain('constitution');
    expect(output).toMatch(/epsilon_local/);
  }, 120_000);
});
