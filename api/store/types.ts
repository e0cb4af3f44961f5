import type { Citizen, Message } from '../schemas/citizenship.ts';

/** A citizen as stored: the public record plus the SHA-256 of its passport number. */
export interface CitizenRecord extends Citizen {
  passportHash: string;
}

/** A replayable answer to an Idempotency-Key, sealed with a key only the client holds. */
export interface IdempotencyRecord {
  /** SHA-256 of route and Idempotency-Key. */
  keyHash: string;
  /** SHA-256 of the request body the key was first used with. */
  fingerprint: string;
  status: number;
  /** The answer's body, AES-256-GCM encrypted under a key derived from the Idempotency-Key. */
  sealed: string;
  createdAt: string;
}

export interface PageQuery {
  /** Opaque cursor from a previous page's nextCursor. */
  cursor?: string | null;
  limit: number;
}
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Citizens, newest first. */
export interface CitizenStore {
  /** Adds a citizen and, in the same atomic write, its wall shout. */
  add(citizen: CitizenRecord, shout?: Message): Promise<void>;
  get(memberId: string): Promise<CitizenRecord | null>;
  list(query: PageQuery): Promise<Page<CitizenRecord>>;
  stats(): Promise<{ total: number; byClass: Record<string, number> }>;
}

/** Feed messages (including wall shouts), newest first. */
export interface FeedStore {
  add(message: Message): Promise<void>;
  list(query: PageQuery): Promise<Page<Message>>;
  stats(): Promise<{ messages: number; questions: number; wall: number; verified: number }>;
}

export interface IdempotencyStore {
  get(keyHash: string, now: Date): Promise<IdempotencyRecord | null>;
  put(record: IdempotencyRecord): Promise<void>;
}

/** Every aggregate the service keeps. Nothing outside api/store knows how it is kept. */
export interface Store {
  citizens: CitizenStore;
  feed: FeedStore;
  idempotency: IdempotencyStore;
  close(): Promise<void>;
}

/** Idempotency keys are kept this long (DESIGN section 3). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
