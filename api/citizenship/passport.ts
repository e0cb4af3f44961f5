import { hash, timingSafeEqual } from 'node:crypto';
import { randomBytes } from '../ids.ts';
import { PassportMismatch, PassportRequired } from '../problems/domain.ts';

/** A new passport number: 256 random bits, shown once. */
export const newPassport = (): string => `pp_${Buffer.from(randomBytes(32)).toString('base64url')}`;

/** What is stored instead of the passport number. A random token needs no slow hash. */
export const hashPassport = (passport: string): string => hash('sha256', passport, 'hex');

/** Checks the passport a request carries (its bearer token) against a stored hash: PassportRequired when absent, PassportMismatch when wrong. */
export function checkPassport(token: string | null, storedHash: string | null): void {
  if (token === null) {
    throw new PassportRequired();
  }
  if (!passportMatches(token, storedHash)) {
    throw new PassportMismatch();
  }
}

/** Whether `token` is the passport whose hash is stored, compared in constant time. */
export function passportMatches(token: string, storedHash: string | null): boolean {
  const given = Buffer.from(hashPassport(token), 'hex');
  const stored = Buffer.from(storedHash ?? '0'.repeat(64), 'hex');
  return storedHash !== null && timingSafeEqual(given, stored);
}
