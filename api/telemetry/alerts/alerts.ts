import type { Logger } from 'pino';

/**
 * What an alert is about: a family never seen before, a spike of failed verifications, a crawler on
 * a path robots.txt disallows, a crawler whose purpose the path's AI usage preference refuses.
 */
export type AlertKind = 'new-family' | 'spoofing' | 'robots' | 'preference';

/** The JSON body POSTed to ALERT_WEBHOOK_URL (and the fields logged at warn). */
export interface Alert {
  kind: AlertKind;
  family: string;
  operator: string | null;
  /** When it was raised (ISO 8601). */
  at: string;
  /** What tripped it, in words. */
  message: string;
  /** The numbers behind it: failed verifications in the window, the path, the threshold. */
  detail: Record<string, string | number>;
  /** The same (kind, family) raises nothing more until this window has passed. */
  windowMs: number;
}

/** Where the name an alert is about came from: it says which memory keeps the alert's pairs. */
export interface AlertSource {
  /**
   * The bot table's family the name is a claim of (a classification's `known`, cut as the ledger
   * cuts names), for a name that is not itself one of `tableFamilies`: device-detector's families
   * are named as the client spelled their token (`COLLECTD`, `collectd`), a row each. Such a name's
   * pairs are its table family's: raised once a window whatever the spelling, kept with the table's.
   */
  known?: string | undefined;
  /**
   * The hashed address of the request that raised it (an IPv6 client's /64): its client's share of
   * other names' pairs, and of the webhook queue for any name.
   */
  client?: string | undefined;
}

export interface AlertOptions {
  /**
   * The names of the bot table's families (telemetryRulesOf's `tableFamilies`, cut as the ledger
   * cuts them): their (kind, family) pairs, and those of names that claim them (AlertSource.known),
   * are remembered apart, at most these times the four kinds, and never refused. Any other name is
   * one a client wrote, under ALERT_LIMITS.
   */
  tableFamilies: ReadonlySet<string>;
  /** Where alerts are POSTed as JSON; only logged without one. */
  webhookUrl?: string | undefined;
  logger: Logger;
  /** Each kind once per family per window (ALERT_WINDOW_MS). */
  windowMs: number;
  /** Failed verifications of one family within a window that make a spoofing alert (ALERT_SPOOF_THRESHOLD). */
  spoofThreshold: number;
  /** Alerts waiting for the webhook at most (ALERT_QUEUE_MAX); past it new ones are dropped (still logged). */
  maxQueue: number;
  /** One POST's time to answer (ALERT_TIMEOUT_MS). */
  timeoutMs: number;
  /** The service's name, sent in the User-Agent. */
  service?: string;
  now?: () => Date;
}

/**
 * What alerts remember of names the bot table does not know (a pool family's, or any a client
 * writes into a User-Agent): the table's own families are remembered apart, bounded by the table.
 * Past a bound, expired pairs go first (oldest first), then a new pair is not raised (logged once a
 * window) until one expires.
 */
export const ALERT_LIMITS = {
  /** (kind, family) pairs of such names, all clients together; as many families with failed verifications. */
  poolPairs: 1024,
  /**
   * Of them, the pairs one client's requests raised (a client as the ledger's pool counts it: its
   * hashed address, an IPv6 host by its /64; a line without one, its name's own): four names, as the
   * ledger gives one client's units an hour, in each of the four kinds.
   */
  poolPairsPerClient: 16,
  /**
   * Alerts of one client waiting for the webhook at once (a line without an address: its name's own),
   * whatever their names: a client that writes the table's names cannot fill the queue for others.
   * A verified crawler's new-family alert is not counted against it.
   */
  queuedPerClient: 8,
  /**
   * Share of the webhook queue alerts about names the bot table does not know may take together:
   * many clients writing invented names leave the rest to the table's families and proven crawlers.
   */
  queuedPoolShare: 0.5,
} as const;
/** Characters of a family name or path an alert carries (both come from the network). */
const FIELD_CHARS = 128;
const cut = (s: string) => (s.length > FIELD_CHARS ? `${s.slice(0, FIELD_CHARS - 1)}…` : s);

/** Whether a (kind, family) last raised at `last` may be raised again at `now`: once per window. */
export const dueAgain = (last: number | undefined, now: number, windowMs: number) =>
  last === undefined || now - last >= windowMs;

/**
 * Alerts none of the anchors ship, sent to the operator's webhook and to the log at warn. Bounded
 * every way: each (kind, family) once per window; the table's families' pairs remembered apart (at
 * most the table times the four kinds), so that names clients write can never crowd them out, and
 * other names' pairs under ALERT_LIMITS, one client's share capped; one POST in flight with a
 * timeout, at most `maxQueue` waiting; nothing is retried, nothing waits on the request path
 * (telemetry calls these synchronously and returns).
 */
export function createAlerts(o: AlertOptions) {
  const now = o.now ?? (() => new Date());
  /** The table family whose pairs a name's alerts are, if any: the name's own, or the one it claims. */
  const tableKeyOf = (family: string, source: AlertSource | undefined): string | undefined =>
    o.tableFamilies.has(family)
      ? family
      : source?.known !== undefined && o.tableFamilies.has(source.known)
        ? source.known
        : undefined;
  // When each (kind, family) pair of the table's families was last raised: never more than the table
  // times the kinds, so never full, and nothing leaves.
  const tableRaised = new Map<string, number>();
  // Other names' pairs, oldest first (`renew`), with the client that raised each, and how many each
  // client holds: ALERT_LIMITS.poolPairs at most, each client's share ALERT_LIMITS.poolPairsPerClient.
  const poolRaised = new Map<string, { at: number; client: string }>();
  const poolShares = new Map<string, number>();
  /** Per family: when its window began, its failures in it, and before when a spoofing alert cannot be due. */
  type Failures = { since: number; failed: number; quietUntil: number };
  const tableFailures = new Map<string, Failures>();
  const poolFailures = new Map<string, Failures>();
  // A Date only where one is written: a flood of spoofed requests reads the clock as a number.
  const nowMs = o.now ? () => o.now!().getTime() : Date.now;
  const queue: Alert[] = [];
  // The client each queued alert came from, and how many each has waiting (ALERT_LIMITS.queuedPerClient).
  // A crawler its verification proved has no entry: it takes no client's place and is never bumped.
  const queuedFrom = new Map<Alert, string>();
  const queuedBy = new Map<string, number>();
  // Queued alerts about names the bot table does not know, at most queuedPoolShare of the queue.
  const poolQueued = new Set<Alert>();
  // Rounded up: a queue of one still takes such an alert.
  const poolQueueMax = Math.ceil(o.maxQueue * ALERT_LIMITS.queuedPoolShare);
  let inFlight = 0;
  // When a pair refused for a full memory, and for a client's share used up, was last logged.
  const refusedSince: Record<'full' | 'share', number | undefined> = { full: undefined, share: undefined };
  const stats = { raised: 0, sent: 0, failed: 0, dropped: 0 };
  let idle: (() => void)[] = [];

  /**
   * Room for one more key in a bounded map kept oldest first (`renew` moves a key to the end):
   * expired entries leave from the front, so a full memory costs a look at its oldest entry, not a
   * walk of all its keys on every claim it refuses. False when none could leave.
   */
  function room<V>(map: Map<string, V>, max: number, started: (v: V) => number, at: number): boolean {
    for (const [k, v] of map) {
      if (map.size < max || at - started(v) < o.windowMs) break;
      map.delete(k);
    }
    return map.size < max;
  }

  /** Other names' pairs whose window is over leave, oldest first, each giving its client's share back. */
  function expirePool(at: number): void {
    for (const [key, pair] of poolRaised) {
      if (at - pair.at < o.windowMs) break;
      poolRaised.delete(key);
      const held = poolShares.get(pair.client)! - 1;
      if (held === 0) poolShares.delete(pair.client);
      else poolShares.set(pair.client, held);
    }
  }

  /** When a (kind, family) pair was last raised and is still remembered. */
  function lastRaised(kind: AlertKind, family: string, table: string | undefined): number | undefined {
    return table !== undefined ? tableRaised.get(`${kind}\n${table}`) : poolRaised.get(`${kind}\n${family}`)?.at;
  }

  /** A pair of a name the table does not know, refused: counted, and logged once a window a reason. */
  function refuse(reason: 'full' | 'share', at: number, kind: AlertKind, family: string): false {
    stats.dropped++;
    if (dueAgain(refusedSince[reason], at, o.windowMs)) {
      refusedSince[reason] = at;
      o.logger.warn(
        { remembered: poolRaised.size, clients: poolShares.size, kind, family: cut(family) },
        reason === 'full'
          ? 'bot alert: the memory of alerts about names the bot table does not know is full; they are not raised until pairs expire (logged once a window)'
          : "bot alert: one client's share of alerts about names the bot table does not know is used up; its next are not raised until its pairs expire (logged once a window)",
      );
    }
    return false;
  }

  /** Sets a key as the newest: a Map keeps a key where it was first set, and `room` reads the front as the oldest. */
  function renew<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
  }

  function raise(
    kind: AlertKind,
    family: string,
    operator: string | null,
    message: string,
    detail: Alert['detail'],
    proven = false,
    source?: AlertSource,
  ): boolean {
    const at = now();
    const ms = at.getTime();
    const table = tableKeyOf(family, source);
    // A request without an address is a client of its own name, as the ledger's pool counts it.
    const who = source?.client ?? `\0${table ?? family}`;
    if (table !== undefined) {
      const key = `${kind}\n${table}`;
      if (!dueAgain(tableRaised.get(key), ms, o.windowMs)) return false;
      tableRaised.set(key, ms);
    } else {
      const key = `${kind}\n${family}`;
      expirePool(ms);
      // Still remembered: raised within the window.
      if (poolRaised.has(key)) return false;
      const held = poolShares.get(who) ?? 0;
      if (poolRaised.size >= ALERT_LIMITS.poolPairs) return refuse('full', ms, kind, family);
      if (held >= ALERT_LIMITS.poolPairsPerClient) return refuse('share', ms, kind, family);
      poolRaised.set(key, { at: ms, client: who });
      poolShares.set(who, held + 1);
    }
    stats.raised++;
    const alert: Alert = {
      kind,
      family: cut(family),
      operator,
      at: at.toISOString(),
      message,
      detail,
      windowMs: o.windowMs,
    };
    o.logger.warn({ alert }, `bot alert: ${message}`);
    if (!o.webhookUrl) return true;
    if (!proven && (queuedBy.get(who) ?? 0) >= ALERT_LIMITS.queuedPerClient) {
      onlyLogged(alert, "this alert's client has its share of the webhook queue waiting");
      return true;
    }
    if (!proven && table === undefined && poolQueued.size >= poolQueueMax) {
      onlyLogged(alert, 'alerts about names the bot table does not know fill their share of the webhook queue');
      return true;
    }
    if (queue.length >= o.maxQueue) {
      // A crawler proven by its verification takes the place of the newest alert anyone could raise
      // by writing a name: a flood of claims cannot keep a real crawler's arrival from the webhook.
      const bumped = proven ? queue.findLastIndex((a) => queuedFrom.has(a)) : -1;
      const left = bumped < 0 ? alert : unqueued(queue.splice(bumped, 1)[0]!);
      onlyLogged(left, 'the webhook queue is full');
      if (left === alert) return true;
    }
    if (table === undefined) poolQueued.add(alert);
    if (!proven) {
      queuedFrom.set(alert, who);
      queuedBy.set(who, (queuedBy.get(who) ?? 0) + 1);
    }
    queue.push(alert);
    pump();
    return true;
  }

  /** An alert kept from the webhook: counted dropped, and logged with why. */
  function onlyLogged(alert: Alert, why: string): void {
    stats.dropped++;
    o.logger.warn(
      { kind: alert.kind, family: alert.family, queued: queue.length },
      `bot alert: ${why}; this alert was only logged`,
    );
  }

  /** An alert leaving the queue gives its client's place back, and its place in the pool's share. */
  function unqueued(alert: Alert): Alert {
    poolQueued.delete(alert);
    const who = queuedFrom.get(alert);
    if (who === undefined) return alert;
    queuedFrom.delete(alert);
    const left = queuedBy.get(who)! - 1;
    if (left === 0) queuedBy.delete(who);
    else queuedBy.set(who, left);
    return alert;
  }

  function pump(): void {
    if (inFlight > 0) return;
    const next = queue.shift();
    if (!next) {
      for (const done of idle.splice(0)) done();
      return;
    }
    unqueued(next);
    inFlight++;
    void post(next).finally(() => {
      inFlight--;
      pump();
    });
  }

  async function post(alert: Alert): Promise<void> {
    try {
      const res = await fetch(o.webhookUrl!, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'User-Agent': `${o.service ?? 'agent-node'}-alerts` },
        body: JSON.stringify(alert),
        signal: AbortSignal.timeout(o.timeoutMs),
        redirect: 'error',
      });
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      stats.sent++;
    } catch (error) {
      stats.failed++;
      o.logger.warn(
        { kind: alert.kind, family: alert.family, err: error instanceof Error ? error.message : String(error) },
        'bot alert: the webhook did not take it (not retried)',
      );
    }
  }

  return {
    /**
     * A family's first claim that did not fail verification; `proven` when it was verified (by its
     * ranges, DNS or signature): such an alert is queued even when the queue is full of others.
     * `source`: the table family the name claims, or the client a name the table does not know came from.
     */
    newFamily(family: string, operator: string | null, cls: string, proven = false, source?: AlertSource): boolean {
      return raise('new-family', family, operator, `a new bot family: ${cut(family)}`, { class: cls }, proven, source);
    },
    /** Failed verifications of a family; a spoofing alert once they reach the threshold within a window. */
    failed(family: string, operator: string | null, n = 1, source?: AlertSource): boolean {
      if (n <= 0) return false;
      const ms = nowMs();
      // The table's families apart (bounded by the table); other names' under ALERT_LIMITS.poolPairs.
      const table = tableKeyOf(family, source);
      const failures = table !== undefined ? tableFailures : poolFailures;
      const name = table ?? family;
      let f = failures.get(name);
      if (!f || ms - f.since >= o.windowMs) {
        if (!f && table === undefined && !room(failures, ALERT_LIMITS.poolPairs, (v) => v.since, ms)) return false;
        f = { since: ms, failed: 0, quietUntil: 0 };
        renew(failures, name, f);
      }
      f.failed += n;
      // Past the threshold, every failure of a spoofed family (a flood, each of its requests) would
      // raise the alert already raised this window: not due, a comparison and nothing built for it.
      if (f.failed < o.spoofThreshold || ms < f.quietUntil) return false;
      const last = lastRaised('spoofing', family, table);
      if (!dueAgain(last, ms, o.windowMs)) {
        f.quietUntil = last! + o.windowMs;
        return false;
      }
      return raise(
        'spoofing',
        family,
        operator,
        `${f.failed} failed verifications of ${cut(family)} within ${Math.round(o.windowMs / 60_000)} min: someone is spoofing it`,
        { failed: f.failed, threshold: o.spoofThreshold },
        false,
        source,
      );
    },
    /** A crawler requested a path robots.txt disallows (a bait path); `source` as for newFamily. */
    robots(family: string, operator: string | null, path: string, source?: AlertSource): boolean {
      return raise(
        'robots',
        family,
        operator,
        `${cut(family)} requested ${cut(path)}, which robots.txt disallows`,
        { path: cut(path) },
        false,
        source,
      );
    },
    /** A crawler whose purpose the path's AI usage preference refuses (a training crawler on `train-ai=n`) requested it. */
    preference(family: string, operator: string | null, path: string, usage: string, source?: AlertSource): boolean {
      return raise(
        'preference',
        family,
        operator,
        `${cut(family)} requested ${cut(path)}, whose AI usage preference (${usage}) its purpose goes against`,
        { path: cut(path), usage },
        false,
        source,
      );
    },
    /** Counts since start: raised, sent, failed to send, dropped (queue full or the client's share of it taken, or a pool pair refused); what is remembered. */
    stats: () => ({
      ...stats,
      queued: queue.length,
      inFlight,
      remembered: { table: tableRaised.size, pool: poolRaised.size, clients: poolShares.size },
    }),
    /** Resolves once nothing is queued or in flight (tests, shutdown). */
    idle: (): Promise<void> =>
      inFlight === 0 && queue.length === 0 ? Promise.resolve() : new Promise((resolve) => idle.push(resolve)),
  };
}
export type Alerts = ReturnType<typeof createAlerts>;
