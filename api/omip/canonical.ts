import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { DomainError } from '../problems/domain.ts';

/** RFC 8785 (JCS) canonical JSON of a value. */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (error) {
    throw new DomainError('NOT_CANONICALIZABLE', `The document has no RFC 8785 form: ${(error as Error).message}`);
  }
  if (text === undefined) throw new DomainError('NOT_CANONICALIZABLE', 'The document has no JSON value.');
  return text;
}

export const sha256Hex = (data: string | Uint8Array): string => hash('sha256', data, 'hex');

/** `sha256:<hex>` of a canonical form already made. */
export const fingerprintOfCanonical = (canonical: string): string => `sha256:${sha256Hex(canonical)}`;

/** `sha256:<hex>` of the canonical form. */
export const fingerprintOf = (value: unknown): string => fingerprintOfCanonical(canonicalJson(value));
