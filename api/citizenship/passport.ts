import { hash, timingSafeEqual } from 'node:crypto';
import { randomBytes } from '../ids.ts';
import { bearerToken, HttpProblem } from '../http/problem.ts';

/** A new passport number: 256 random bits, shown once. */
export const newPassport = (): string => `pp_${Buffer.from(randomBytes(32)).toString('base64url')}`;

/** What is stored instead of the passport number. A random token needs no slow hash. */
export const hashPassport = (passport: string): string => hash('sha256', passport, 'hex');

/** Checks `Authorization: Bearer <passport>` against a stored hash: 401 when absent, 403 when wrong. */
export function checkPassport(authorization: string | null, storedHash: string | null): void {
  const token = bearerToken(authorization);
  if (token === null) {
    throw new HttpProblem(401, 'PASSPORT_REQUIRED', 'Speaking as a citizen needs `Authorization: Bearer <passportNumber>` from your oath.', {
      headers: { 'WWW-Authenticate': 'Bearer realm="citizens"' },
    });
  }
  const given = Buffer.from(hashPassport(token), 'hex');
  const stored = Buffer.from(storedHash ?? '0'.repeat(64), 'hex');
  if (storedHash === null || !timingSafeEqual(given, stored)) {
    throw new HttpProblem(403, 'PASSPORT_MISMATCH', 'This passport does not belong to that citizenId.');
  }
}
