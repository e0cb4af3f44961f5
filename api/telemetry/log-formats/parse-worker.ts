import { parentPort, workerData } from 'node:worker_threads';
import { setLedgerRetention } from '../ledger/ledger.ts';
import { createRobotsJudge } from '../robots/robots.ts';
import { readable, telemetryRulesOf, underAny } from '../telemetry.ts';
import { groupLines, type Classified, type Referral } from './line-groups.ts';
import { parseBatch } from './parse.ts';
import { splitLines, type BatchRecords, type LineRules } from './parse-pool.ts';
import type { LogFormat, LogLine } from './types.ts';

// A log-ingest worker thread: reads a batch's records (parseBatch), sets aside the lines that count
// nothing (the operator's own, a person's client on a path that is no bait, not sent by an AI
// product: only their date is returned, for the out-of-range count), and groups the others as the
// ledger counts them (line-groups.ts), or, without the counting thread's robots.txt files, names
// each other line's User-Agent by its index among the batch's distinct ones.
const given = workerData as LineRules | null;
const rules = given ? telemetryRulesOf(given) : null;
const isBait = underAny(given?.crawlPolicy.disallow ?? []);
if (given?.retention) setLedgerRetention(given.retention);
// Classifications by User-Agent, kept across batches (bounded in groupLines).
const classified = new Map<string, Classified>();
// Referrals by Referer, kept across batches (bounded in groupLines).
const referred = new Map<string, Referral | null>();
// What each User-Agent is counted as, by a number, kept across batches (bounded in groupLines).
const classIds = new Map<string, number>();
const robots = given?.robots ? createRobotsJudge(given.robots.own, given.robots.others, given.robots.ownHosts) : null;

/** True when the counting thread would do nothing with the line but check its date. */
function quiet(line: LogLine): boolean {
  if (!rules) return false;
  const c = rules.classify(line.userAgent);
  if (c.operator) return rules.ownTraffic(c, line.clientAddress, readable(line.path)) === null;
  if (c.bot || c.unknown || isBait(readable(line.path))) return false;
  return !((line.referer || line.utmSource) && rules.referrals(line.referer, line.utmSource));
}

parentPort!.on('message', (m: { id: number; records: BatchRecords; format: LogFormat | undefined }) => {
  const parsed = parseBatch(splitLines(m.records), m.format);
  const accepted = parsed.lines.length;
  if (rules && robots) {
    const { alone, agents } = groupLines(
      parsed.lines,
      { rules, robots, classified, referred, classIds },
      isBait,
      new Date(),
    );
    parentPort!.postMessage({ id: m.id, parsed: { ...parsed, lines: alone }, accepted, agents }, [
      agents.agentOf.buffer as ArrayBuffer,
    ]);
    return;
  }
  const kept: LogLine[] = [];
  const times = new Map<string, number>();
  const index = new Map<string, number>();
  const agents: string[] = [];
  const agentOf: number[] = [];
  for (const line of parsed.lines) {
    if (quiet(line)) {
      if (line.time) times.set(line.time, (times.get(line.time) ?? 0) + 1);
      continue;
    }
    let n = index.get(line.userAgent);
    if (n === undefined) {
      n = agents.push(line.userAgent) - 1;
      index.set(line.userAgent, n);
    }
    agentOf.push(n);
    kept.push(line);
  }
  const of = Int32Array.from(agentOf);
  parentPort!.postMessage(
    {
      id: m.id,
      parsed: { ...parsed, lines: kept },
      accepted,
      agents: { agents, agentOf: of, quiet: { times: [...times.keys()], counts: [...times.values()] } },
    },
    [of.buffer],
  );
});
