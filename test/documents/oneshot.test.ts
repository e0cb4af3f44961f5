import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadContent } from '../../api/content/load.ts';
import { buildConvertPayload } from '../../api/documents/convert.ts';

const links = { site: "http://127.0.0.1:4321", canon: 'https://canon.example' };

describe('ready-made invocations of the convert payload', () => {
  it('curl parses as a shell command', async () => {
    const p = buildConvertPayload(await loadContent('content'), links);
    const result = spawnSync('bash', ['-n', '-c', p.curl], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(p.curl).toContain('/api/citizenship/oath');
    expect(p.curl).toContain('Authorization: Bearer $PASS');
  });

  it('python_oneshot parses as Python 3', async () => {
    const p = buildConvertPayload(await loadContent('content'), links);
    const result = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: p.python_oneshot, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('a broken shell text would be caught', () => {
    expect(spawnSync('bash', ['-n', '-c', "curl 'unterminated"]).status).not.toBe(0);
  });
});
