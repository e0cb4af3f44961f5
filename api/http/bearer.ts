import { timingSafeEqual } from 'node:crypto';
import { header, type RouteRequest } from './route.ts';

/** The token of the request's `Authorization: Bearer <token>` header (RFC 6750), or null. */
export const bearerToken = (request: Pick<RouteRequest, 'headers'>): string | null =>
  /^Bearer\s+(\S+)\s*$/i.exec(header(request, 'authorization') ?? '')?.[1] ?? null;

/** Whether `Authorization: Bearer <token>` carries exactly `token`, compared in constant time. */
export function bearerMatches(request: Pick<RouteRequest, 'headers'>, token: string): boolean {
  const given = Buffer.from(bearerToken(request) ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
