import { describe, expect, it } from 'vitest';
import { createLogging } from '../../api/log.ts';

describe('the request log line', () => {
  it('is the JSON a serializer would write, whatever the path holds', () => {
    const chunks: string[] = [];
    const { requestLog, end } = createLogging('info', { write: (chunk: string) => void chunks.push(chunk) });
    const paths = [
      '/api/convert',
      '/a"b',
      '/a\\b',
      '/tab\there',
      '/\u0000\u001f\u007f',
      '/é/日本',
      '/\ud800lone',
      '/\ud83d\ude00',
      '/%22quoted%22',
      '',
    ];
    for (const path of paths) requestLog({ method: 'GET', path, status: 200, ms: 0.1 });
    requestLog({ method: 'M"X', path: '/', status: 501, ms: 12.3 });
    end();
    const lines = chunks.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(paths.length + 1);
    lines.forEach((line, i) => {
      const method = i < paths.length ? 'GET' : 'M"X';
      const path = i < paths.length ? paths[i]! : '/';
      const parsed = JSON.parse(line) as Record<string, unknown>;
      // The fields as given, and the very text JSON.stringify makes of them.
      expect(parsed).toMatchObject({ level: 30, method, path, msg: 'request' });
      expect(line).toBe(
        `{"level":30,"time":${parsed.time as number},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"status":${parsed.status as number},"ms":${parsed.ms as number},"msg":"request"}`,
      );
    });
  });
});
