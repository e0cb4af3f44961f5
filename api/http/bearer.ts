import { timingSafeEqual } from 'node:crypto';
import { bearerToken } from '../bearer.ts';
import { header, type RouteRequest } from './route.ts';

/** Whether `Authorization: Bearer <token>` carries exactly `token`, compared in constant time. */
export function bearerMatches(request: Pick<RouteRequest, 'headers'>, token: string): boolean {
  const given = Buffer.from(bearerToken(header(request, 'authorization')) ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
