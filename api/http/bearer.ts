import { timingSafeEqual } from 'node:crypto';
import { header, type RouteRequest } from './route.ts';

/**
 * The token of the request's `Authorization: Bearer <token>` header (RFC 6750), or null. A token
 * with spaces in it is no token of ours, but one was sent: it is given back, to be refused as wrong
 * rather than as missing.
 */
export const bearerToken = (request: Pick<RouteRequest, 'headers'>): string | null =>
  /^Bearer\s+(\S(?:.*\S)?)\s*$/i.exec(header(request, 'authorization') ?? '')?.[1] ?? null;

/** Whether `Authorization: Bearer <token>` carries exactly `token`, compared in constant time. */
export function bearerMatches(request: Pick<RouteRequest, 'headers'>, token: string): boolean {
  const given = Buffer.from(bearerToken(request) ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
