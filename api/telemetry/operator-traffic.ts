import { isIP, type BlockList } from 'node:net';
import { addressFamily, networkList, unmapped } from '../net/address.ts';
import type { BotFamily } from '../schemas/bot-families.ts';
import type { Classification } from './classification/classify.ts';

/** The paths the probes and metrics answer, by the operation name metrics give them: a health checker asks these, from wherever it runs. */
export const PROBE_PATHS: Readonly<Record<string, string>> = {
  '/livez': 'livez',
  '/readyz': 'readyz',
  '/metrics': 'metrics',
};

// The operator's side of a network: loopback, private (RFC 1918), shared (RFC 6598: Kubernetes pod
// and node networks often use it), link-local, and IPv6 unique-local.
const INTERNAL = networkList([
  ['127.0.0.0', 8],
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
]);

/**
 * Tells the operator's own traffic (health probes, this project's CLIs: `kind: operator`) from a
 * client that only writes their names. An operator's token is the operator's own on a probe path,
 * from an address on the operator's side of the network, from the ranges its probes are published
 * to come from (`probes_from`), or on a log line that records no address. From anywhere else it is
 * a claim like any bot's, counted and unverifiable: "kube-probe/1.29 GPTBot/1.2" from the internet
 * no longer hides a crawler from the wall and its traps.
 */
export function createOperatorTraffic(families: readonly BotFamily[]) {
  const published = new Map<string, BlockList>();
  for (const f of families)
    if (f.probes_from?.length)
      published.set(
        f.family,
        networkList(
          f.probes_from.map((cidr) => {
            const [net, bits] = cidr.split('/') as [string, string];
            return [net, Number(bits)];
          }),
        ),
      );
  /**
   * What a request counts as: null for the operator's own (never counted), else its classification,
   * an operator's token from outside the operator's network made a bot's claim.
   */
  return function counted(c: Classification, address: string | undefined, path: string): Classification | null {
    if (!c.operator) return c;
    // A log line without an address: nothing tells, and no client chooses what a log records.
    if (address === undefined || Object.hasOwn(PROBE_PATHS, path)) return null;
    const ip = unmapped(address);
    if (isIP(ip) !== 0) {
      const family = addressFamily(ip);
      if (INTERNAL.check(ip, family) || published.get(c.family!)?.check(ip, family)) return null;
    }
    const { operator: _own, ...claim } = c;
    return { ...claim, bot: true, class: 'Bot' };
  };
}
export type OperatorTraffic = ReturnType<typeof createOperatorTraffic>;
