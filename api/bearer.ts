/** The token of an `Authorization: Bearer <token>` header (RFC 6750), or null. */
export const bearerToken = (authorization: string | null | undefined): string | null =>
  /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? null;
