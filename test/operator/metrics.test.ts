import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const TOKEN = 'metrics-token-0123456789abcdefghijkl';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reading of the Prometheus text format (0.0.4): every line is a HELP, a TYPE or a sample
 * of a declared family, label values are quoted and escaped, values are numbers.
 */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const SAMPLE = new RegExp(
    `^(${NAME})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*",?)*)\\})? (-?[0-9.e+-]+|[Nn][Aa][Nn]|[+-]Inf)(?: -?\\d+)?$`,
  );
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const help = new RegExp(`^# HELP (${NAME}) .*$`).exec(line);
    if (help) continue;
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    expect(m, `not a Prometheus line: ${line}`).not.toBeNull();
    const labels = Object.fromEntries(
      [...(m![2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]),
    );
    const name = m![1]!;
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((n) => types.has(n));
    expect(family, `sample of an undeclared family: ${name}`).toBeDefined();
    samples.push({ name, labels, value: Number(m![3]) });
  }
  return { types, samples };
}
const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ METRICS_TOKEN: TOKEN, WRITE_RATE_LIMIT: '2' });
});
afterAll(async () => {
  await server.stop();
});
const scrape = async () => {
  const res = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
};
const oath = (name: string) =>
  fetch(`${server.url}/api/citizenship/oath`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, purpose: 'metrics' }),
  });

describe('/metrics', () => {
  it('is refused without the token', async () => {
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
  });

  it('parses as Prometheus text and its counters move with traffic', async () => {
    const before = await scrape();
    expect(before.types.get('agentnode_http_requests_total')).toBe('counter');
    expect(before.types.get('agentnode_http_request_duration_seconds')).toBe('histogram');
    for (const name of [
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'agentnode_journal_write_seconds',
      'agentnode_journal_group_size',
      'agentnode_store_errors_total',
      'agentnode_rate_limit_refusals_total',
      'agentnode_ledger_families',
      'agentnode_ledger_bytes',
      'agentnode_verifications_in_flight',
      'agentnode_dns_lookups_total',
      'agentnode_dns_queries_total',
      'agentnode_dns_unchecked_claims_total',
    ]) {
      expect(before.types.has(name), name).toBe(true);
    }

    for (let i = 0; i < 3; i++)
      await (
        await fetch(`${server.url}/api/convert`, {
          headers: { 'User-Agent': 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' },
        })
      ).arrayBuffer();
    await (await fetch(`${server.url}/no/such/page`)).arrayBuffer();
    const answers = [await oath('metrics-a'), await oath('metrics-b'), await oath('metrics-c')];
    expect(answers.map((r) => r.status)).toEqual([201, 201, 429]);

    const after = (await scrape()).samples;
    const b = before.samples;
    const delta = (name: string, labels: Record<string, string> = {}) =>
      value(after, name, labels) - value(b, name, labels);
    expect(delta('agentnode_http_requests_total', { operation: 'getConvert', status_class: '2xx' })).toBe(3);
    expect(delta('agentnode_http_requests_total', { operation: 'other', status_class: '4xx' })).toBe(1);
    expect(delta('agentnode_http_requests_total', { operation: 'takeOath', status_class: '2xx' })).toBe(2);
    expect(delta('agentnode_http_requests_total', { operation: 'takeOath', status_class: '4xx' })).toBe(1);
    expect(delta('agentnode_http_request_duration_seconds_count', { operation: 'takeOath' })).toBe(3);
    expect(delta('agentnode_rate_limit_refusals_total')).toBe(1);
    // Two oaths are two journal appends, in one or two durable writes.
    expect(delta('agentnode_journal_group_size_sum')).toBe(2);
    expect(delta('agentnode_journal_write_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(value(after, 'agentnode_ledger_families')).toBeGreaterThanOrEqual(1);
    expect(value(after, 'agentnode_ledger_bytes')).toBeGreaterThan(value(b, 'agentnode_ledger_bytes'));
    expect(value(after, 'agentnode_store_errors_total')).toBe(0);
    // Why claims went unchecked is a fixed set of labels, each present from the first scrape.
    expect(
      after
        .filter((s) => s.name === 'agentnode_dns_unchecked_claims_total')
        .map((s) => s.labels.reason)
        .sort(),
    ).toEqual(['busy', 'site_busy', 'site_unanswered']);
    // The operation label never carries a raw path.
    expect(after.some((s) => s.labels.operation?.includes('/'))).toBe(false);
  });

  it('can be served on its own port (METRICS_PORT) without a token, and is off by default', async () => {
    const separate = await startServer({ METRICS_PORT: '0' });
    try {
      const url = /"metrics":"([^"]+)"/.exec(separate.logs.find((l) => l.includes('"msg":"listening"'))!)![1]!;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(parseExposition(await res.text()).types.has('agentnode_http_requests_total')).toBe(true);
      // Not on the public port.
      expect((await fetch(`${separate.url}/metrics`)).status).toBe(404);
    } finally {
      await separate.stop();
    }
  });

  it('counts store errors when the disk refuses a write', async () => {
    // A small tmpfs, filled up while the server runs.
    const dir = mkdtempSync(join(tmpdir(), 'metrics-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir]);
    const full = await startServer({ DATA_DIR: dir, METRICS_TOKEN: TOKEN, WRITE_RATE_LIMIT: '0' });
    try {
      const errors = async () => {
        const res = await fetch(`${full.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
        return value(parseExposition(await res.text()).samples, 'agentnode_store_errors_total');
      };
      expect(await errors()).toBe(0);
      try {
        writeFileSync(join(dir, 'filler'), Buffer.alloc(1024 * 1024));
      } catch {
        // ENOSPC: the filler took what was left, which is the point.
      }
      // The journal's preallocated blocks may still take a few: write until the disk says no.
      let refused = 0;
      for (let i = 0; i < 200 && refused === 0; i++) {
        const res = await fetch(`${full.url}/api/citizenship/oath`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: `full-${i}`, purpose: 'metrics' }),
        });
        await res.arrayBuffer();
        if (res.status === 503) refused++;
      }
      expect(refused).toBe(1);
      expect(await errors()).toBe(1);
      rmSync(join(dir, 'filler'));
    } finally {
      await full.stop();
      execFileSync('umount', ['-l', dir]);
    }
  }, 60_000);
});
