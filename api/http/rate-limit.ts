import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { clientKey } from '../net/address.ts';
import { HttpProblem } from './problem.ts';

/** Per-client write limiting (token bucket per minute) with IETF RateLimit headers. */
export interface WriteLimiter {
  /** Takes one write from the client's budget; returns the headers, or throws 429. */
  take(client: string): Promise<Record<string, string>>;
  /**
   * Throws the same 429 as `take` when the client has nothing left, without taking anything: the
   * gateway calls it before reading an upload body, and the route then takes the write once.
   */
  peek(client: string): Promise<void>;
}

const POLICY = 'writes';

/** One budget per client key (an IPv6 /64 is one client), hashed before it reaches the limiter's keys. */
const keyOf = (client: string) => createHash('sha256').update(clientKey(client)).digest('base64url').slice(0, 22);

function headers(limit: number, res: RateLimiterRes): Record<string, string> {
  const reset = Math.ceil(res.msBeforeNext / 1000);
  return {
    'RateLimit-Policy': `"${POLICY}";q=${limit};w=60`,
    RateLimit: `"${POLICY}";r=${Math.max(0, res.remainingPoints)};t=${reset}`,
  };
}

/** A limiter from WRITE_RATE_LIMIT (per minute; 0 turns it off). The backend is passed in. */
export function createWriteLimiter(perMinute: number, backend?: RateLimiterAbstract): WriteLimiter {
  if (perMinute === 0) return { take: async () => ({}), peek: async () => {} };
  const limiter = backend ?? new RateLimiterMemory({ points: perMinute, duration: 60 });
  const limited = (rejection: RateLimiterRes) => {
    const retry = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    return new HttpProblem(
      'RATE_LIMITED',
      `Too many writes from this address: ${perMinute} a minute. Try again in ${retry} s.`,
      {
        headers: { ...headers(perMinute, rejection), 'Retry-After': String(retry) },
      },
    );
  };
  return {
    async take(client) {
      try {
        return headers(perMinute, await limiter.consume(keyOf(client)));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        throw limited(rejection);
      }
    },
    async peek(client) {
      const state = await limiter.get(keyOf(client));
      if (state && state.consumedPoints >= perMinute)
        throw limited(new RateLimiterRes(0, state.msBeforeNext, state.consumedPoints));
    },
  };
}
