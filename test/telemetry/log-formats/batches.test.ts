import { describe, expect, it } from 'vitest';
import { createBatcher, type LogBatch } from '../../../api/telemetry/log-formats/batches.ts';

function batchesOf(lines: string[], maxLines = 2, maxBytes = 1024 * 1024): LogBatch[] {
  const batcher = createBatcher({ maxLines, maxBytes });
  const out = lines.flatMap((l) => batcher.push(l));
  const last = batcher.end();
  return last ? [...out, last] : out;
}

describe('log batches', () => {
  it('cuts at fixed record counts, repeats the W3C directives in front of each batch, and keys by place and bytes', () => {
    const lines = ['#Version: 1.0', '#Fields: cs-method cs-uri-stem', 'GET\t/a', '', 'GET\t/b', 'GET\t/c'];
    const batches = batchesOf(lines);
    expect(batches.map((b) => [b.firstLine, b.records, b.body])).toEqual([
      [3, 2, '#Version: 1.0\n#Fields: cs-method cs-uri-stem\nGET\t/a\nGET\t/b\n'],
      [6, 1, '#Version: 1.0\n#Fields: cs-method cs-uri-stem\nGET\t/c\n'],
    ]);
    // The same content gives the same keys (a file loaded twice); the same bytes elsewhere do not.
    expect(batchesOf(lines).map((b) => b.key)).toEqual(batches.map((b) => b.key));
    expect(batchesOf(['x', ...lines]).map((b) => b.key)).not.toContain(batches[1]!.key);
    expect(new Set(batches.map((b) => b.key)).size).toBe(2);
  });

  it('ends a batch before a new #Fields: line, and by size before it grows past the limit', () => {
    const batches = batchesOf(['#Fields: a', '1', '#Fields: b', '2'], 10);
    expect(batches.map((b) => b.body)).toEqual(['#Fields: a\n1\n', '#Fields: b\n2\n']);
    const bySize = batchesOf(['aaaa', 'bbbb', 'cccc'], 10, 10);
    expect(bySize.map((b) => b.records)).toEqual([2, 1]);
  });
});
