import type { Constitution } from '../schemas/constitution.ts';

/** A registered building block of the admissibility subsystem. */
export interface Primitive {
  id: string;
  kind: 'predicate' | 'verdict' | 'bound' | 'window' | 'strategy';
  description: string;
  /** Where it is registered: a JSON pointer into the constitution. */
  source: string;
}

/** Every primitive registered under omip.drift, in registration order. */
export function buildPrimitives(c: Constitution): Primitive[] {
  const d = c.omip.drift;
  const at = (path: string) => `/eon/constitution.json#/omip/drift/${path}`;
  return [
    ...d.predicates.map((p, i) => ({
      id: p.id,
      kind: 'predicate' as const,
      description: `${p.c} tau ${p.tau}, weight ${p.weight}; failure means ${p.fail_means}.`,
      source: at(`predicates/${i}`),
    })),
    ...d.verdicts.map((v, i) => ({
      id: v,
      kind: 'verdict' as const,
      description: `Verdict ${i + 1} of ${d.verdicts.length}, by rising severity.`,
      source: at(`verdicts/${i}`),
    })),
    ...Object.entries(d.bounds).map(([id, value]) => ({
      id,
      kind: 'bound' as const,
      description: `Delta bound ${value}.`,
      source: at(`bounds/${id}`),
    })),
    {
      id: 'window',
      kind: 'window' as const,
      description: `${d.window.steps} ${d.window.unit}, aggregate ${d.window.aggregate}.`,
      source: at('window'),
    },
    ...d.contraction.strategies.map((s, i) => ({
      id: s,
      kind: 'strategy' as const,
      description: `Contraction strategy ${i + 1}; at most ${d.contraction.max_attempts} attempts.`,
      source: at(`contraction/strategies/${i}`),
    })),
  ];
}
