import { hash } from 'node:crypto';
import type { BlockList } from 'node:net';
import type { Logger } from 'pino';
import type { ObservedRequest } from '../gateway/gateway.ts';
import type { TelemetryStore } from '../store/types.ts';
import type { BotFamily } from '../schemas/bot-families.ts';
import { classificationOf, type Classification, type Classifier } from './classify.ts';
import { count, countStep, emptySnapshot, mergeSnapshots, settle, type FunnelStep, type TelemetrySnapshot } from './ledger.ts';
import { createVerifier, type Resolver, type Verdict } from './verify.ts';
import { createSignatureVerifier, type DirectoryFetcher } from './web-bot-auth.ts';

const HEARTBEAT_MS = 5 * 60 * 1000;

export interface TelemetryOptions {
  classify: Classifier;
  resolver: Resolver;
  /** The curated families (content/bot-families.yaml), for Web Bot Auth's registered agents. */
  families: BotFamily[];
  /** Fetches a registered signature agent's key directory. */
  fetchDirectory: DirectoryFetcher;
  /** Operators' published address ranges by family. */
  ranges?: Map<string, BlockList>;
  store: TelemetryStore;
  /** Paths disallowed in robots.txt and linked invisibly: a hit is presence. */
  baitPaths: string[];
  logger: Logger;
  /** How often the ledger is saved when it changed. */
  flushMs?: number;
  now?: () => Date;
}

/** The path as people read it; a path that cannot be decoded is kept as sent. */
function readable(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

const under = (path: string, prefixes: string[]) => prefixes.some((p) => path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`));

/**
 * The gateway's telemetry: one call per finished request, counted in memory and saved in batches
 * (every few seconds when changed, and at close), never a write per request. Client addresses are
 * only used, hashed, to match verification answers; they are never stored.
 */
export async function createTelemetry(o: TelemetryOptions) {
  const now = o.now ?? (() => new Date());
  const ledger: TelemetrySnapshot = (await o.store.load(([first, ...rest]) => mergeSnapshots(first!, rest))) ?? emptySnapshot(now());
  let dirty = false;
  // Saved at least this often even when nothing changed: on a shared store, a ledger left unsaved
  // for TELEMETRY_STALE_MS is taken for a stopped process's and folded into a new one.
  let lastSaved = Date.now();
  // Requests counted before their verification answer came back, by family and hashed address.
  const waiting = new Map<string, number>();
  const verifier = createVerifier(o.resolver, (family, ipKey, verdict) => {
    const key = `${family}\n${ipKey}`;
    settle(ledger, family, verdict, waiting.get(key) ?? 0);
    waiting.delete(key);
    dirty = true;
  }, o.ranges);
  const signatures = createSignatureVerifier({
    families: o.families,
    fetchDirectory: o.fetchDirectory,
    onResult: (family, verdict) => {
      settle(ledger, family, verdict, 1);
      dirty = true;
    },
  });

  /**
   * A request signed by a registered agent is that agent's family, whatever its User-Agent says
   * (signed agents often send a browser's), unless the User-Agent names another known family.
   */
  function bySignature(r: ObservedRequest, classification: Classification): { classification: Classification; verification: Verdict | null } | null {
    if (!r.signature) return null;
    const family = signatures.familyOf(r.signature.signatureAgent);
    if (!family || (classification.known && classification.known !== family)) return null;
    const verification = signatures.check(family, { method: r.method, authority: r.host, ...r.signature });
    return { classification: classificationOf(family), verification };
  }

  async function flush(): Promise<void> {
    if (!dirty && Date.now() - lastSaved < HEARTBEAT_MS) return;
    dirty = false;
    try {
      await o.store.save(structuredClone(ledger));
      lastSaved = Date.now();
    } catch (error) {
      dirty = true;
      o.logger.warn({ err: error }, 'telemetry: could not save the ledger; it stays in memory and is retried');
    }
  }
  const timer = setInterval(() => void flush(), o.flushMs ?? 5000);
  timer.unref();

  /** Counts one request, from the gateway or a CDN log line; false when it is neither a bot nor a bait hit. */
  function countRequest(r: { method: string; path: string; host: string; status: number }, classification: Classification, bait: boolean, path: string, at: Date, verification: Verdict | null): boolean {
    const counted = count(ledger, { at, method: r.method, path, status: r.status, host: r.host.replace(/:\d+$/, ''), classification, verification, bait, disallowed: bait });
    dirty ||= counted;
    return counted;
  }

  /** A claimed family's verdict for an address; null while a check is under way (settled later). */
  function verify(classification: Classification, address: string): Verdict | null {
    const known = classification.known;
    if (!known || !verifier.canVerify(known)) return null;
    const ipKey = hash('sha256', address, 'base64url').slice(0, 16);
    const verification = verifier.lookup(known, address, ipKey);
    if (verification === null) {
      const key = `${known.family}\n${ipKey}`;
      waiting.set(key, (waiting.get(key) ?? 0) + 1);
    }
    return verification;
  }

  return {
    /**
     * Counts requests a CDN or another server logged. A line's client address is verified exactly as
     * a live request's (ranges first, then bounded reverse DNS) and, like it, never stored.
     */
    ingest(lines: { method: string; path: string; host: string; userAgent: string; status: number; time?: string | undefined; clientAddress?: string | undefined }[]): number {
      let counted = 0;
      for (const l of lines) {
        const path = readable(l.path);
        const classification = o.classify(l.userAgent);
        const bait = under(path, o.baitPaths);
        const verification = l.clientAddress && (classification.bot || bait) ? verify(classification, l.clientAddress) : null;
        if (countRequest(l, classification, bait, path, l.time ? new Date(l.time) : now(), verification)) counted++;
      }
      return counted;
    },
    observe(r: ObservedRequest): void {
      const claimed = o.classify(r.userAgent);
      const signed = bySignature(r, claimed);
      const classification = signed?.classification ?? claimed;
      const path = readable(r.path);
      const bait = under(path, o.baitPaths);
      if (!classification.bot && !bait) return;
      const verification = signed ? signed.verification : verify(classification, r.remoteAddress);
      countRequest(r, classification, bait, path, now(), verification);
    },
    /** A funnel step taken over MCP, for the family its User-Agent names. */
    step(userAgent: string, step: FunnelStep): void {
      dirty = countStep(ledger, o.classify(userAgent), step, now()) || dirty;
    },
    /** Verification checks under way (family and address pairs awaiting DNS), for metrics. */
    verificationsInFlight: (): number => waiting.size,
    /** The live ledger of this process (read-only use). */
    snapshot: (): TelemetrySnapshot => ledger,
    /** This process's live ledger added to what the other processes last saved. */
    async combined(): Promise<TelemetrySnapshot> {
      return mergeSnapshots(ledger, await o.store.others());
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}
export type Telemetry = Awaited<ReturnType<typeof createTelemetry>>;
