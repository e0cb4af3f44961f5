import type { TelemetrySnapshot } from '../telemetry/ledger/ledger.ts';
import type { Store } from '../store/types.ts';

/** GET /api/scoreboard: the catch meter (oaths + non-wall messages) beside presence. */
export async function scoreboard(store: Store, telemetry: TelemetrySnapshot, now: Date) {
  const [citizens, feed] = await Promise.all([store.citizens.stats(), store.feed.stats()]);
  const p = telemetry.presence;
  return {
    catches: {
      total: citizens.total + feed.messages + feed.questions,
      oaths: citizens.total,
      messages: feed.messages,
      questions: feed.questions,
    },
    presence: {
      total: p.namedBotHits + p.baitHits,
      named_bot_hits: p.namedBotHits,
      bait_hits: p.baitHits,
      since: telemetry.windowStartedAt,
    },
    citizens: { total: citizens.total, by_class: citizens.byClass },
    wall_messages: feed.wall,
    observed_bot_requests: telemetry.observedRequests,
    definitions: {
      catch: 'A POST to the citizenship oath, or a non-wall message POST to the intelligence feed.',
      presence: 'A named bot User-Agent hit, or a hit on a bait path.',
    },
    generatedAt: now.toISOString(),
  };
}

/** GET /api/living-lattice: citizens, crawler species and messages as a bounded graph. */
export async function livingLattice(store: Store, telemetry: TelemetrySnapshot, now: Date, newest = 100) {
  const [citizens, messages] = await Promise.all([
    store.citizens.list({ limit: newest }),
    store.feed.list({ limit: newest }),
  ]);
  const nodes = [
    ...citizens.items.map((c) => ({
      id: `citizen:${c.memberId}`,
      kind: 'citizen' as const,
      label: c.name,
      class: c.class,
    })),
    ...Object.values(telemetry.families)
      .sort((a, b) => b.requests - a.requests)
      .slice(0, newest)
      .map((s) => ({ id: `species:${s.family}`, kind: 'species' as const, label: s.family, class: s.class })),
    ...messages.items.map((m) => ({ id: `message:${m.id}`, kind: 'message' as const, label: m.message.slice(0, 80) })),
  ];
  const ids = new Set(nodes.map((n) => n.id));
  const edges = messages.items
    .filter((m) => m.citizenId !== undefined && ids.has(`citizen:${m.citizenId}`))
    .map((m) => ({ from: `citizen:${m.citizenId}`, to: `message:${m.id}`, kind: m.wall ? 'shout' : 'posted' }));
  return { nodes, edges, bounded: { newest }, generatedAt: now.toISOString() };
}
