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

export interface AlertOptions {
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
 * (kind, family) pairs and families with failed verifications remembered at most: past it, expired
 * ones go, then new ones are not raised (logged once a window), but a verified crawler's arrival
 * takes the oldest pair's place.
 */
export const ALERT_MAX_KEYS = 4096;
/** Characters of a family name or path an alert carries (both come from the network). */
const FIELD_CHARS = 128;
const cut = (s: string) => (s.length > FIELD_CHARS ? `${s.slice(0, FIELD_CHARS - 1)}…` : s);

/** Whether a (kind, family) last raised at `last` may be raised again at `now`: once per window. */
export const dueAgain = (last: number | undefined, now: number, windowMs: number) =>
  last === undefined || now - last >= windowMs;

/**
 * Alerts none of the anchors ship, sent to the operator's webhook and to the log at warn. Bounded
 * every way: each (kind, family) once per window, at most ALERT_MAX_KEYS remembered, one POST in
 * flight with a timeout, at most `maxQueue` waiting; nothing is retried, nothing waits on the
 * request path (telemetry calls these synchronously and returns).
 */
export function createAlerts(o: AlertOptions) {
  const now = o.now ?? (() => new Date());
  const raised = new Map<string, number>();
  /** Per family: when its window began, its failures in it, and before when a spoofing alert cannot be due. */
  const failures = new Map<string, { since: number; failed: number; quietUntil: number }>();
  // A Date only where one is written: a flood of spoofed requests reads the clock as a number.
  const nowMs = o.now ? () => o.now!().getTime() : Date.now;
  const queue: Alert[] = [];
  // Queued alerts of crawlers their verification proved (never bumped for another).
  const provenAlerts = new WeakSet<Alert>();
  let inFlight = 0;
  // When the full memory of raised pairs was last logged.
  let fullSince: number | undefined;
  const stats = { raised: 0, sent: 0, failed: 0, dropped: 0 };
  let idle: (() => void)[] = [];

  /**
   * Room for one more key in a bounded map kept oldest first (`renew` moves a key to the end):
   * expired entries leave from the front, so a full memory costs a look at its oldest entry, not a
   * walk of all ALERT_MAX_KEYS on every claim it refuses. False when none could leave.
   */
  function room<V>(map: Map<string, V>, started: (v: V) => number, at: number): boolean {
    for (const [k, v] of map) {
      if (map.size < ALERT_MAX_KEYS || at - started(v) < o.windowMs) break;
      map.delete(k);
    }
    return map.size < ALERT_MAX_KEYS;
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
  ): boolean {
    const at = now();
    const ms = at.getTime();
    const key = `${kind}\n${family}`;
    if (!dueAgain(raised.get(key), ms, o.windowMs)) return false;
    if (!raised.has(key) && !room(raised, (v) => v, ms)) {
      // A crawler proven by its verification takes the place of the oldest pair remembered: names
      // written into User-Agents and Host headers cannot fill the memory against its arrival.
      if (proven) raised.delete(raised.keys().next().value!);
      else {
        stats.dropped++;
        if (dueAgain(fullSince, ms, o.windowMs)) {
          fullSince = ms;
          o.logger.warn(
            { remembered: raised.size, kind, family: cut(family) },
            'bot alert: the memory of raised alerts is full; alerts are not raised until pairs expire (logged once a window)',
          );
        }
        return false;
      }
    }
    renew(raised, key, ms);
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
    if (queue.length >= o.maxQueue) {
      // A crawler proven by its verification takes the place of the newest alert anyone could raise
      // by writing a name: a flood of claims cannot keep a real crawler's arrival from the webhook.
      const bumped = proven ? queue.findLastIndex((a) => !provenAlerts.has(a)) : -1;
      const left = bumped < 0 ? alert : queue.splice(bumped, 1)[0]!;
      stats.dropped++;
      o.logger.warn(
        { kind: left.kind, family: left.family, queued: queue.length },
        'bot alert: the webhook queue is full; this alert was only logged',
      );
      if (left === alert) return true;
    }
    if (proven) provenAlerts.add(alert);
    queue.push(alert);
    pump();
    return true;
  }

  function pump(): void {
    if (inFlight > 0) return;
    const next = queue.shift();
    if (!next) {
      for (const done of idle.splice(0)) done();
      return;
    }
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
     */
    newFamily(family: string, operator: string | null, cls: string, proven = false): boolean {
      return raise('new-family', family, operator, `a new bot family: ${cut(family)}`, { class: cls }, proven);
    },
    /** Failed verifications of a family; a spoofing alert once they reach the threshold within a window. */
    failed(family: string, operator: string | null, n = 1): boolean {
      if (n <= 0) return false;
      const ms = nowMs();
      let f = failures.get(family);
      if (!f || ms - f.since >= o.windowMs) {
        if (!f && !room(failures, (v) => v.since, ms)) return false;
        f = { since: ms, failed: 0, quietUntil: 0 };
        renew(failures, family, f);
      }
      f.failed += n;
      // Past the threshold, every failure of a spoofed family (a flood, each of its requests) would
      // raise the alert already raised this window: not due, a comparison and nothing built for it.
      if (f.failed < o.spoofThreshold || ms < f.quietUntil) return false;
      const last = raised.get(`spoofing\n${family}`);
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
      );
    },
    /** A crawler requested a path robots.txt disallows (a bait path). */
    robots(family: string, operator: string | null, path: string): boolean {
      return raise('robots', family, operator, `${cut(family)} requested ${cut(path)}, which robots.txt disallows`, {
        path: cut(path),
      });
    },
    /** A crawler whose purpose the path's AI usage preference refuses (a training crawler on `train-ai=n`) requested it. */
    preference(family: string, operator: string | null, path: string, usage: string): boolean {
      return raise(
        'preference',
        family,
        operator,
        `${cut(family)} requested ${cut(path)}, whose AI usage preference (${usage}) its purpose goes against`,
        { path: cut(path), usage },
      );
    },
    /** Counts since start: raised, sent, failed to send, dropped (queue full or too many keys). */
    stats: () => ({ ...stats, queued: queue.length, inFlight }),
    /** Resolves once nothing is queued or in flight (tests, shutdown). */
    idle: (): Promise<void> =>
      inFlight === 0 && queue.length === 0 ? Promise.resolve() : new Promise((resolve) => idle.push(resolve)),
  };
}
export type Alerts = ReturnType<typeof createAlerts>;
