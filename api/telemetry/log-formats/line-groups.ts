import { cut, LEDGER_LIMITS, ledgerTime } from '../ledger/ledger.ts';
import type { RobotsJudge, RobotsVerdict } from '../robots/robots.ts';
import { hostName, readable, robotsTokens, type telemetryRulesOf, underAny } from '../telemetry.ts';
import type { Outcome } from '../verification/verify.ts';
import type { BatchAgents, LineGroup } from './parse-pool.ts';
import type { LogLine } from './types.ts';
import { remember } from '../../memo.ts';
import { mayBeVisit, REFERERS, rememberReferrals } from '../referrals/referrals.ts';

/** What an ingest worker judges lines with: the counting thread's rules, made from the same content and files. */
export interface GroupRules {
  rules: ReturnType<typeof telemetryRulesOf>;
  robots: RobotsJudge | null;
  /** The worker's answers by User-Agent, kept across batches (classifiedBy). */
  classified?: Map<string, Classified>;
  /** The worker's referrals by Referer, kept across batches. */
  referred?: Map<string, Referral | null>;
  /** The worker's numbers for what a User-Agent is counted as, kept across batches. */
  classIds?: Map<string, number>;
}

type Classification = ReturnType<ReturnType<typeof telemetryRulesOf>['classify']>;
/** A User-Agent's classification and the key of what it is counted as. */
export interface Classified {
  c: Classification;
  /** The number of what it is counted as. */
  id: number;
  /** The batch it was last seen in, and its index among that batch's agents. */
  batch: number;
  agent: number;
}
/** User-Agents a worker keeps the answer for: a log's distinct strings are few next to its lines. */
export const CLASSIFIED_AGENTS = 8192;

let batches = 0;
export type Referral = NonNullable<ReturnType<GroupRules['rules']['referrals']>>;
export { REFERERS };
// What a User-Agent is counted as, by a number: classes never share one (numbers are not reused,
// so a memo cleared when full gives a class a new number, and its lines only group apart).
let nextClassId = 0;
function classify(rules: GroupRules['rules'], ua: string, classIds: Map<string, number>): Classified {
  const c = rules.classify(ua);
  // The table entry by name: a family's entry is one object, curated or generated.
  const key = `${c.bot}\t${c.unknown === true}\t${c.class}\t${c.verify}\t${c.known ? `=${c.known.family}` : ''}\t${c.family}`;
  let id = classIds.get(key);
  if (id === undefined) id = remember(classIds, CLASSIFIED_AGENTS, key, nextClassId++);
  return { c, id, batch: 0, agent: 0 };
}

/** Lines dated this close to the clock (or after it, or not dated) are counted one by one: the range's upper end moves with the clock. */
const RECENT_MS = 2 * 3_600_000;
/** The latest lines kept for the ledger's recent requests: the ledger keeps fewer than twice its LEDGER_LIMITS.recent. */
const TAIL = 2 * LEDGER_LIMITS.recent;

/**
 * A batch's lines as the counting thread needs them: those that count nothing but their date
 * (`quiet`), and the others in groups of lines the ledger counts alike (same User-Agent, method,
 * path, host, status, hour, verification outcome, referral), with how many and their first and
 * last times, so the counting thread adds a few hundred groups instead of thousands of lines.
 * A line whose count depends on the lines before it goes alone, in its place: a name the bot
 * table does not know (its row is earned by distinct clients, in order), a fetch of robots.txt
 * or a broken rule (a violation counts as after a fetch by time and order), a line dated within
 * RECENT_MS of `now` or not dated. Pure: `now` is the worker's clock, only used to choose.
 */
export function groupLines(
  lines: readonly LogLine[],
  { rules, robots, classified, referred, classIds }: GroupRules,
  isBait: ReturnType<typeof underAny>,
  now: Date,
): { alone: LogLine[]; agents: BatchAgents } {
  const alone: LogLine[] = [];
  const agentOf: number[] = [];
  const agents: string[] = [];
  const times = new Map<string, number>();
  const items: (LineGroup | number)[] = [];
  const groups = new Map<number, Map<string, Map<string, LineGroup>>>();
  const tail: [number, string][] = [];
  const recentFrom = now.getTime() - RECENT_MS;
  const batch = ++batches;
  const cache = classified ?? new Map<string, Classified>();
  const referrals = referred ?? new Map<string, Referral | null>();
  const ids = classIds ?? new Map<string, number>();
  // One lookup by User-Agent a line: hashing a long string is most of what a lookup costs.
  const classifiedAs = (ua: string): Classified => {
    let found = cache.get(ua);
    if (found === undefined) found = remember(cache, CLASSIFIED_AGENTS, ua, classify(rules, ua, ids));
    if (found.batch !== batch) {
      found.batch = batch;
      found.agent = agents.push(ua) - 1;
    }
    return found;
  };
  const referralOf = rememberReferrals(rules.referrals, referrals);
  // Quiet lines' times, counted in runs: consecutive lines mostly share theirs.
  let runTime: string | undefined;
  let run = 0;
  const quietAt = (time: string | undefined) => {
    if (time === runTime) run++;
    else {
      if (runTime) times.set(runTime, (times.get(runTime) ?? 0) + run);
      runTime = time;
      run = 1;
    }
  };
  let lastIso = '';
  let lastMs = NaN;
  let lastInRange = false;
  let lastHour = '';
  for (const line of lines) {
    const found = classifiedAs(line.userAgent);
    const path = readable(line.path);
    // The operator's own lines count nothing; its token from outside its network is a claim, counted alone.
    const c = found.c.operator ? rules.ownTraffic(found.c, line.clientAddress, path) : found.c;
    if (c === null) {
      quietAt(line.time);
      continue;
    }
    const bait = isBait(path);
    const request = c.bot || bait || c.unknown === true;
    const referral =
      (line.referer || line.utmSource) && mayBeVisit(c, line.method, line.status)
        ? referralOf(line.referer, line.utmSource)
        : null;
    if (!request && !referral) {
      quietAt(line.time);
      continue;
    }
    if (line.time !== lastIso) {
      lastIso = line.time ?? '';
      lastMs = line.time ? Date.parse(line.time) : NaN;
      lastInRange = !line.time || ledgerTime(new Date(lastMs), now) !== null;
      lastHour = lastIso.slice(0, 13);
    }
    let item: number;
    const verdict = judge(line, c);
    if (
      !(lastMs < recentFrom) ||
      c !== found.c ||
      // A visit an AI product sent, from an address: one client's visits an hour are capped, in order.
      (referral !== null && line.clientAddress !== undefined) ||
      (c.bot && c.known === null && c.family !== null) ||
      (verdict !== null && (verdict.broke !== null || cut(path, LEDGER_LIMITS.pathChars) === '/robots.txt'))
    ) {
      item = items.push(alone.length) - 1;
      alone.push(line);
      agentOf.push(found.agent);
    } else {
      const verification = c.bot ? outcomeOf(c, line.clientAddress) : null;
      const address = verification === 'lookup' ? line.clientAddress! : '';
      // Lines are grouped by what their User-Agent is counted as, not by the string: a group's
      // first line names it (`agent`), and the counting thread classifies that one alike.
      // By classification and path first: one long key hashed a line cost more than three short ones.
      let byPath = groups.get(found.id);
      if (byPath === undefined) groups.set(found.id, (byPath = new Map()));
      let byRest = byPath.get(line.path);
      if (byRest === undefined) byPath.set(line.path, (byRest = new Map()));
      const key = `${request ? 1 : 0}\t${line.method}\t${line.status}\t${lastHour}\t${verification}\t${address}\t${referral ? `${referral.operator}\n${referral.source}` : ''}\t${line.host}`;
      const group = byRest!.get(key);
      if (group) {
        group.n++;
        if (lastIso < group.since) group.since = lastIso;
        if (lastIso > group.at) {
          group.at = lastIso;
          group.atMs = lastMs;
        }
        item = group.item;
      } else {
        item = items.length;
        const g: LineGroup = {
          item,
          agent: found.agent,
          method: line.method,
          path: line.path,
          host: line.host,
          status: line.status,
          since: lastIso,
          at: lastIso,
          atMs: lastMs,
          n: 1,
          request,
          verification,
          judged: verdict !== null,
          ...(address ? { address } : {}),
          referral,
        };
        byRest!.set(key, g);
        items.push(g);
      }
    }
    // The ledger's recent requests are the last bot and bait requests it counted.
    if ((c.bot || bait) && lastInRange) {
      tail.push([item, line.time ?? '']);
      if (tail.length >= 2 * TAIL) tail.splice(0, tail.length - TAIL);
    }
  }
  quietAt(undefined);
  return {
    alone,
    agents: {
      agents,
      agentOf: Int32Array.from(agentOf),
      quiet: { times: [...times.keys()], counts: [...times.values()] },
      items,
      tail: tail.slice(-TAIL),
    },
  };

  /**
   * The robots.txt verdict on a bot's line, as the counting thread judges it. A judged fetch of
   * robots.txt or a broken rule goes alone: the ledger counts it against the fetches before it.
   */
  function judge(line: LogLine, c: Classification): RobotsVerdict | null {
    if (!robots || !c.bot) return null;
    return robots.judge(hostName(line.host), line.path, robotsTokens(c));
  }

  /** The verification outcome the counting thread would find without a lookup; 'lookup' when reverse DNS decides. */
  function outcomeOf(c: ReturnType<typeof rules.classify>, address: string | undefined): Outcome | 'lookup' {
    const known = c.known;
    if (known?.robots_only) return 'failed';
    const list = known ? rules.ranges.get(known.family) : undefined;
    if (!known || !address || !(list || known.rdns?.length)) return 'unverifiable';
    if (list?.has(address)) return 'verified';
    if (!known.rdns?.length) return list ? 'failed' : 'unverifiable';
    return 'lookup';
  }
}
