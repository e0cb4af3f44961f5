import { passportMatches } from '../citizenship/passport.ts';
import { isId, newId } from '../ids.ts';
import { clientKey } from '../net/address.ts';
import { DomainError, PassportMismatch } from '../problems/domain.ts';
import type { Constitution } from '../schemas/constitution.ts';
import type { DualExchangeRequest, Plan, ScoreRequest, State } from '../schemas/omip.ts';
import { callerWindowKey, type DriftWrite, type KeepAnswer, type PageQuery, type Store } from '../store/types.ts';
import { canonicalJson, fingerprintOf, fingerprintOfCanonical } from './canonical.ts';
import { MerkleLog } from './merkle-log.ts';
import { buildPrimitives } from './primitives.ts';
import { buildReceipt, consistencyOf, inclusionOf, receiptId, type AgentOutcome } from './receipts.ts';
import { unknownPredicateIds } from './predicates.ts';
import { scoreProposal } from './score.ts';
import type { LogSigner } from './signer.ts';

/** Who asks: the passport the request carries (null when none) and its client's address. */
export interface OmipCaller {
  passport: string | null;
  client: string;
}

interface Scorable {
  entity_id: string;
  /** The window the request reads and moves (windowKeys). */
  windowKey: string;
  /** Whether the entity is registered, when windowKeys read it already (a passport's check). */
  registered?: boolean | undefined;
  room: string;
  allowlist?: string[] | undefined;
  plan?: Plan | undefined;
  state?: State | undefined;
}

/** Windows the retention forgot are deleted at most this often (by a write: a store nobody writes to does not grow). */
const PRUNE_EVERY_MS = 60 * 1000;

export interface OmipDeps {
  store: Store;
  constitution: Constitution;
  signer: LogSigner;
  now?: () => Date;
}

/** The admissibility subsystem's I/O edge: windows, metrics and receipts around the pure engine. */
export function createOmip({ store, constitution, signer, now = () => new Date() }: OmipDeps) {
  const drift = constitution.omip.drift;
  const sovereign = new Set<string>(constitution.agents.sovereign);
  const constitutionFingerprint = fingerprintOf(constitution);
  // A registered entity is a sovereign agent of the constitution or a citizen, whose memberId is
  // taken in any case; any other id is no citizen's, and is never sent to the store.
  const citizenOf = async (id: string) => {
    const memberId = id.toLowerCase();
    return isId(memberId) ? store.citizens.get(memberId) : null;
  };
  const registered = async (id: string) => sovereign.has(id) || (await citizenOf(id)) !== null;

  /**
   * Whose window each entity's steps read and move. A citizen's own window only for a request that
   * carries its passport; any other request moves its caller's own window for that entity (by its
   * client: an IPv4 address or IPv6 /64), so no caller can set the window another caller's, a
   * citizen's or the sovereign pair's verdicts rest on. A passport that proves none of the entities
   * is refused (403), as on a message.
   */
  async function windowKeys(
    ids: string[],
    caller: OmipCaller,
  ): Promise<{ windowKey: string; registered: boolean | undefined }[]> {
    let own: string | undefined;
    // What the passport's check read, so that scoring does not read the citizen again.
    const registeredIds = new Map<string, boolean>();
    if (caller.passport !== null) {
      for (const id of ids) {
        const citizen = await citizenOf(id);
        registeredIds.set(id, sovereign.has(id) || citizen !== null);
        if (passportMatches(caller.passport, citizen?.passportHash ?? null)) own = id;
      }
      if (own === undefined) throw new PassportMismatch();
    }
    const theirs = clientKey(caller.client);
    return ids.map((id) => ({
      windowKey: id === own ? id.toLowerCase() : callerWindowKey(id, theirs),
      registered: registeredIds.get(id),
    }));
  }

  let prunedAt = -Infinity;
  /** Windows the retention forgot leave the store, at most once a PRUNE_EVERY_MS; a failed prune waits for the next. */
  function pruneWindows(at: Date): void {
    if (at.getTime() - prunedAt < PRUNE_EVERY_MS) return;
    prunedAt = at.getTime();
    void store.drift.prune(at).catch(() => undefined);
  }

  /** A state may score only registered predicates: 422 naming the others, before anything is scored. */
  function checkPredicateIds(inputs: { state?: State | undefined; path: string }[]) {
    const errors = inputs.flatMap(({ state, path }) =>
      unknownPredicateIds(state?.scores, constitution).map((id) => ({
        path: `${path}/state/scores/${id}`,
        message: `${id} is not a predicate registered in the constitution`,
      })),
    );
    if (errors.length === 0) return;
    const ids = [...new Set(errors.map((e) => e.path.split('/').at(-1)))];
    throw new DomainError(
      'UNKNOWN_PREDICATE',
      `The state scores predicates the constitution does not register: ${ids.join(', ')}. Registered: ${drift.predicates.map((p) => p.id).join(', ')}.`,
      { extra: { errors } },
    );
  }

  async function evaluate(input: Scorable) {
    checkPredicateIds([{ state: input.state, path: '' }]);
    return scoreProposal(constitution, {
      proposal: {
        entity_id: input.entity_id,
        room: input.room,
        allowlist: input.allowlist,
        steps: input.plan?.steps ?? [],
        weights: input.plan?.weights,
        given: input.state?.scores,
      },
      plan: input.plan,
      history: await store.drift.window(input.windowKey, now()),
      registered: input.registered ?? (await registered(input.entity_id)),
      input,
      constitutionFingerprint,
    });
  }

  /** Scores for the record: the answer, and the write that moves the entity's window and counts the sample. */
  async function scoreForRecord(input: Scorable) {
    const { windowAfter: _window, appended, ...answer } = await evaluate(input);
    const decision_id = newId();
    const write: DriftWrite = {
      entityId: input.windowKey,
      appended,
      keep: drift.window.steps,
      sample: {
        decision_id,
        entity_id: input.entity_id,
        verdict: answer.verdict,
        delta_t: answer.delta_t,
        delta_window: answer.delta_window,
        failed_predicates: answer.failed_predicates,
        contraction_attempts: answer.contraction.length,
        fail_closed: !answer.proceed,
        at: now().toISOString(),
      },
    };
    return { answer: { decision_id, ...answer }, write };
  }

  const tree = new MerkleLog();
  /** The Merkle log brought up to the store's receipts (another process may have appended). */
  async function currentTree() {
    const start = tree.size;
    tree.appendFrom(start, await store.receipts.idsFrom(start));
    return tree;
  }
  const signedHead = (log: MerkleLog) =>
    signer.signHead({ tree_size: log.size, root_hash: log.root().toString('hex'), timestamp: now().toISOString() });

  /** A stored receipt, its hash checked again, with its inclusion proof and the signed head. */
  async function receiptAnswer(id: string) {
    const entry = await store.receipts.get(id);
    if (!entry) throw new DomainError('NOT_FOUND', `No receipt ${id}.`);
    if (receiptId(entry.receipt) !== entry.id)
      throw new DomainError('RECEIPT_CORRUPT', 'The stored receipt no longer matches its id.');
    const log = await currentTree();
    return {
      receipt: { id: entry.id, ...entry.receipt },
      ...inclusionOf(entry.index, log),
      tree_head: signedHead(log),
    };
  }

  return {
    /** POST /api/omip/score; `keep` seals the answer into the same write. */
    async score(input: ScoreRequest, caller: OmipCaller, keep?: KeepAnswer) {
      const [window] = await windowKeys([input.entity_id], caller);
      pruneWindows(now());
      const { answer, write } = await scoreForRecord({ ...input, ...window! });
      await store.drift.record(write.entityId, write.appended, write.keep, write.sample, keep?.(answer));
      return answer;
    },

    /** POST /api/omip/project: contraction as a dry run, no metrics, no window. */
    async project(input: ScoreRequest, caller: OmipCaller) {
      const [window] = await windowKeys([input.entity_id], caller);
      const { windowAfter: _window, appended: _appended, ...answer } = await evaluate({ ...input, ...window! });
      const nearest = answer.contracted_plan ?? (answer.proceed ? input.plan : undefined);
      const last = answer.contraction.at(-1);
      return {
        dry_run: true,
        ...answer,
        projection: {
          admissible: answer.proceed,
          plan: nearest ?? null,
          delta: answer.recovered ? last!.delta : answer.delta_t,
        },
      };
    },

    /** POST /api/omip/fingerprint. */
    fingerprint(document: unknown) {
      const canonical = canonicalJson(document);
      return {
        canonical,
        fingerprint: fingerprintOfCanonical(canonical),
        algorithm: 'sha256',
        canonicalization: 'RFC 8785',
      };
    },

    /**
     * POST /api/omip/dual-exchange: each agent scored alone; a content-addressed, chained receipt.
     * Both steps, the receipt and the idempotency record are one write. The record keeps the
     * receipt's id: a replay answers that receipt with its proof against the current tree head.
     */
    async dualExchange(input: DualExchangeRequest, caller: OmipCaller, keep?: KeepAnswer) {
      // Both sides are checked before either is scored, so a bad second side records nothing.
      checkPredicateIds(
        input.agents.map((agent, i) => ({ state: agent.proposal.state, path: `/agents/${i}/proposal` })),
      );
      const windows = await windowKeys(
        input.agents.map((agent) => agent.id),
        caller,
      );
      pruneWindows(now());
      const scored = await Promise.all(
        input.agents.map(async (agent, i) => {
          const { answer: a, write } = await scoreForRecord({
            entity_id: agent.id,
            ...windows[i]!,
            room: agent.room,
            allowlist: agent.allowlist,
            plan: agent.proposal.plan,
            state: agent.proposal.state,
          });
          const outcome = {
            id: agent.id,
            verdict: a.verdict,
            proceed: a.proceed,
            recovered: a.recovered,
            delta_t: a.delta_t,
            delta_window: a.delta_window,
            failed_predicates: a.failed_predicates,
            input_fingerprint: a.input_fingerprint,
          } satisfies AgentOutcome;
          return { outcome, write };
        }),
      );
      const outcomes = scored.map((s) => s.outcome) as [AgentOutcome, AgentOutcome];
      const at = now().toISOString();
      const entry = await store.receipts.append(
        (prev) => {
          const receipt = buildReceipt(outcomes, constitutionFingerprint, at, prev);
          return { id: receiptId(receipt), receipt };
        },
        { drift: scored.map((s) => s.write), ...(keep ? { idempotency: (e) => keep({ receipt_id: e.id }) } : {}) },
      );
      return receiptAnswer(entry.id);
    },

    /** The answer a repeated dual exchange replays: the kept receipt, with its proof against the current tree head. */
    async replayDualExchange(kept: unknown) {
      const id = (kept as { receipt_id?: unknown }).receipt_id;
      // A record kept before receipts were kept by id holds the whole answer.
      if (typeof id !== 'string') return kept;
      return receiptAnswer(id);
    },

    receipt: receiptAnswer,

    async receipts(query: PageQuery) {
      const page = await store.receipts.list(query);
      return {
        receipts: page.items.map((e) => ({ id: e.id, logIndex: e.index, ...e.receipt })),
        nextCursor: page.nextCursor,
      };
    },

    /** GET /api/omip/log: the signed tree head, the public key, and a consistency proof when asked. */
    async log(first: number | null) {
      const log = await currentTree();
      if (first !== null && (first < 1 || first > log.size))
        throw new DomainError('INVALID_QUERY', `first must be between 1 and the tree size ${log.size}.`);
      return {
        tree_head: signedHead(log),
        public_key: signer.publicKeyPem,
        hashing: 'RFC 9162: leaf = SHA-256(0x00 || receipt id), node = SHA-256(0x01 || left || right)',
        signature: 'Ed25519 over the RFC 8785 form of {tree_size, root_hash, timestamp}',
        ...(first !== null ? { consistency: consistencyOf(first, log) } : {}),
      };
    },

    primitives: () => buildPrimitives(constitution),

    /** GET /api/omip/drift: live metrics, counts by verdict, recent samples. */
    async driftMetrics() {
      const m = await store.drift.metrics(20);
      return {
        delta_t: m.last?.delta_t ?? 0,
        delta_window: m.last?.delta_window ?? 0,
        verdict: m.last?.verdict ?? 'PERSIST',
        failed_predicates: m.last?.failed_predicates ?? [],
        contraction_count: m.contraction_count,
        fail_closed: m.fail_closed,
        samples: m.samples,
        by_verdict: Object.fromEntries(drift.verdicts.map((v) => [v, m.by_verdict[v] ?? 0])),
        recent: m.recent,
        epsilon: {
          local: drift.bounds.epsilon_local,
          recoverable: drift.bounds.epsilon_recoverable,
          critical: drift.bounds.epsilon_critical,
        },
        window: drift.window,
        distance_kind: drift.distance.kind,
        generatedAt: now().toISOString(),
      };
    },
  };
}
export type Omip = ReturnType<typeof createOmip>;
