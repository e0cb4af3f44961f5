import { describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { BUILD } from '../../api/build-info.ts';
import { createLogging, LOGGED_PATH_CHARS, tenths } from '../../api/log.ts';

describe('the request log line', () => {
  it('is the JSON a serializer would write, whatever the path holds', () => {
    const chunks: string[] = [];
    const { requestLog, end } = createLogging('info', { write: (chunk) => void chunks.push(String(chunk)) });
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
    // Each path twice in a row (the second line reuses the first's text), then a method on the last path.
    const sent = [
      ...paths.flatMap((path) => [path, path]).map((path) => ({ method: 'GET', path })),
      { method: 'M"X', path: '' },
      { method: 'GET', path: '' },
    ];
    const time = Date.parse('2026-11-24T12:00:00Z');
    // Under 100 ms (a line's end made once) and over it.
    const duration = (i: number) => (i % 2 === 0 ? i * 0.37 : i * 37.3);
    sent.forEach(({ method, path }, i) =>
      requestLog({ method, path, status: 200, durationMs: duration(i), time: time + i }),
    );
    end();
    const lines = chunks.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(sent.length);
    lines.forEach((line, i) => {
      const { method, path } = sent[i]!;
      const parsed = JSON.parse(line) as Record<string, unknown>;
      // The fields as given, and the very text JSON.stringify makes of them.
      expect(parsed).toMatchObject({ level: 30, time: time + i, method, path, msg: 'request' });
      expect(parsed.ms).toBe(Math.round(duration(i) * 10) / 10);
      expect(line).toBe(
        `{"level":30,"time":${parsed.time as number},"pid":${process.pid},"host":${JSON.stringify(hostname())},"version":${JSON.stringify(BUILD.version)},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"status":${parsed.status as number},"ms":${parsed.ms as number},"msg":"request"}`,
      );
    });
  });

  it('keeps every line whole and in order: request lines, pino lines, and lines longer than a chunk', () => {
    const chunks: string[] = [];
    const { logger, requestLog, end } = createLogging('info', { write: (chunk) => void chunks.push(String(chunk)) });
    // A request line's path is cut (LOGGED_PATH_CHARS); a pino line is as long as its fields.
    const long = 'x'.repeat(20_000);
    const sent: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const path = `/docs/${i}`;
      requestLog({ method: 'GET', path, status: 200 + (i % 300), durationMs: i / 7, time: 1_800_000_000_000 + i });
      sent.push(path);
      if (i % 1000 === 7) {
        logger.info({ long }, 'long');
        sent.push('long');
      }
      if (i % 500 === 3) {
        logger.info({ n: i, note: 'é'.repeat(i % 5) }, 'between');
        sent.push('between');
      }
    }
    end();
    // Many chunks, each of whole lines.
    expect(chunks.length).toBeGreaterThan(30);
    for (const c of chunks) expect(c.endsWith('\n')).toBe(true);
    const lines = chunks
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { path?: string; msg: string });
    expect(lines.map((l) => (l.msg === 'request' ? l.path : l.msg))).toEqual(sent);
  });

  it('logs a long path cut to LOGGED_PATH_CHARS, saying how long it was', () => {
    const chunks: string[] = [];
    const { requestLog, end } = createLogging('info', { write: (chunk) => void chunks.push(String(chunk)) });
    const path = `/${'a'.repeat(15_000)}`;
    requestLog({ method: 'GET', path, status: 404, durationMs: 1 });
    end();
    const line = chunks.join('');
    expect(line.length).toBeLessThan(LOGGED_PATH_CHARS + 400);
    expect(JSON.parse(line).path).toBe(`${path.slice(0, LOGGED_PATH_CHARS)}… (15001 characters)`);
  });

  it('writes a duration to one decimal exactly as JSON writes it rounded', () => {
    const durations = [0, 0.04, 0.05, 0.95, 0.96, 1, 9.95, 9.96, 12.34, 99.99, 1234.56, 86_400_000.06];
    for (let i = 0; i < 10_000; i++) durations.push(Math.random() * 10 ** (i % 7));
    for (const ms of durations) expect([ms, tenths(ms)]).toEqual([ms, JSON.stringify(Math.round(ms * 10) / 10)]);
  });

  it('writes a 5xx line at warn, kept under LOG_LEVEL=warn, and the request id when there is one', () => {
    const chunks: string[] = [];
    const { requestLog, end } = createLogging('warn', { write: (chunk) => void chunks.push(String(chunk)) });
    requestLog({ method: 'GET', path: '/ok', status: 200, durationMs: 1 }, 'a');
    requestLog({ method: 'POST', path: '/api/citizenship/oath', status: 503, durationMs: 2 }, 'req-"1"');
    end();
    const lines = chunks
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, status: 503, requestId: 'req-"1"', pid: process.pid, msg: 'request' }),
    ]);
  });
});
