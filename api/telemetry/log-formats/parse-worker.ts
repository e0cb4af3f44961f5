import { parentPort, workerData } from 'node:worker_threads';
import { setLedgerRetention } from '../ledger/ledger.ts';
import { createRobotsJudge } from '../robots/robots.ts';
import { telemetryRulesOf, underAny } from '../telemetry.ts';
import { groupLines, type Classified, type Referral } from './line-groups.ts';
import { parseBatch } from './parse.ts';
import { splitLines, type BatchRecords, type LineRules } from './parse-pool.ts';
import type { LogFormat } from './types.ts';

// A log-ingest worker thread: reads a batch's records (parseBatch), sets aside the lines that count
// nothing (the operator's own, a person's client on a path that is no bait, not sent by an AI
// product: only their date is returned, for the out-of-range count), and groups the others as the
// ledger counts them (line-groups.ts), by the counting thread's content and robots.txt files.
const given = workerData as LineRules;
const rules = telemetryRulesOf(given);
const isBait = underAny(given.crawlPolicy.disallow);
if (given.retention) setLedgerRetention(given.retention);
// Classifications by User-Agent, kept across batches (bounded in groupLines).
const classified = new Map<string, Classified>();
// Referrals by Referer, kept across batches (bounded in groupLines).
const referred = new Map<string, Referral | null>();
// What each User-Agent is counted as, by a number, kept across batches (bounded in groupLines).
const classIds = new Map<string, number>();
const robots = createRobotsJudge(given.robots.own, given.robots.others, given.robots.ownHosts);

parentPort!.on('message', (m: { id: number; records: BatchRecords; format: LogFormat | undefined }) => {
  const parsed = parseBatch(splitLines(m.records), m.format);
  const accepted = parsed.lines.length;
  const { alone, agents } = groupLines(
    parsed.lines,
    { rules, robots, classified, referred, classIds },
    isBait,
    new Date(),
  );
  parentPort!.postMessage({ id: m.id, parsed: { ...parsed, lines: alone }, accepted, agents }, [
    agents.agentOf.buffer as ArrayBuffer,
  ]);
});
