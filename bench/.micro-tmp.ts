import { readFileSync } from 'node:fs';
import pino from 'pino';
import { loadContent } from '/work/wt/ingest-speed/api/content/load.ts';
import { createTelemetry, telemetryRulesOf, underAny } from '/work/wt/ingest-speed/api/telemetry/telemetry.ts';
import { parseBatch } from '/work/wt/ingest-speed/api/telemetry/log-formats/parse.ts';
import { splitLines } from '/work/wt/ingest-speed/api/telemetry/log-formats/parse-pool.ts';
import { groupLines, type Classified } from '/work/wt/ingest-speed/api/telemetry/log-formats/line-groups.ts';
import { createRobotsJudge } from '/work/wt/ingest-speed/api/telemetry/robots/robots.ts';
import { buildRobots } from '/work/wt/ingest-speed/api/documents/crawl.ts';
import { openMemoryStore } from '/work/wt/ingest-speed/api/store/index.ts';
import { funnelStepOf } from '/work/wt/ingest-speed/api/operations/paths.ts';
const content = await loadContent('content');
const rules = telemetryRulesOf(content);
const isBait = underAny(content.crawlPolicy.disallow);
const own = buildRobots(content, { site: 'http://127.0.0.1:4321', canon: 'http://127.0.0.1:4321' });
const robots = createRobotsJudge(own, new Map(), ['127.0.0.1']);
const file = readFileSync('/tmp/ing/access.log');
const batches: Uint8Array[] = [];
for (let from = 0; from < file.length; ) {
  let end = from; for (let k = 0; k < 5000 && end < file.length; k++) end = file.indexOf(10, end) + 1 || file.length;
  batches.push(new Uint8Array(file.subarray(from, end))); from = end;
}
const classified = new Map<string, Classified>();
const t = await createTelemetry({ funnelStepOf, ...rules, robots: createRobotsJudge(own, new Map(), ['127.0.0.1']), resolver: { reverse: async () => [], resolve: async () => [] }, fetchDirectory: async () => { throw new Error('x'); }, store: openMemoryStore().telemetry, logger: pino({ level: 'silent' }), flushMs: 600000 });
for (let round = 0; round < 3; round++) {
  let parseMs = 0, groupMs = 0, countMs = 0, splitMs = 0;
  for (const b of batches) {
    let t0 = performance.now();
    const recs = splitLines(b);
    splitMs += performance.now() - t0; t0 = performance.now();
    const parsed = parseBatch(recs, 'combined');
    parseMs += performance.now() - t0; t0 = performance.now();
    const g = groupLines(parsed.lines, { rules, robots, classified }, isBait, new Date());
    groupMs += performance.now() - t0;
    const msg = structuredClone({ lines: g.alone, agents: g.agents });
    t0 = performance.now();
    t.ingestBatch(msg.lines, msg.agents);
    countMs += performance.now() - t0;
  }
  console.log(`round ${round}: split ${splitMs.toFixed(0)} parse ${parseMs.toFixed(0)} group ${groupMs.toFixed(0)} count ${countMs.toFixed(0)} ms`);
}
await t.close();
