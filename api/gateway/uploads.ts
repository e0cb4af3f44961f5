import { clientKey } from '../net/address.ts';
import { HttpProblem } from '../http/problem.ts';

/** Bounds on request bodies the gateway streams to disk (audio uploads). */
export interface UploadLimits {
  /** Uploads read at once, over all clients (UPLOAD_CONCURRENCY). */
  maxConcurrent: number;
  /** Uploads read at once from one client (UPLOAD_CONCURRENCY_PER_CLIENT); an IPv6 client is its /64. */
  maxPerClient: number;
  /** Bytes a second read of all uploads together (UPLOAD_BYTES_PER_SECOND); past it, clients wait. */
  bytesPerSecond: number;
  /** A body that sends no byte for this long is dropped with 408 (BODY_IDLE_TIMEOUT_MS); JSON bodies too. */
  idleMs: number;
  /** Folder of the temporary upload files (UPLOAD_TMP_DIR). */
  tmpDir: string;
  /** Refuses, before the body is read, a client that is already over its write limit (throws 429). */
  admit(client: string): Promise<void>;
}

/** Counts uploads in flight, overall and per client; `acquire` throws when either cap is reached. */
export function createUploadSlots(limits: Pick<UploadLimits, 'maxConcurrent' | 'maxPerClient'>) {
  let total = 0;
  const byClient = new Map<string, number>();
  return {
    get inFlight() {
      return total;
    },
    /** Takes a slot for this client; the function returned gives it back (once). */
    acquire(address: string): () => void {
      const key = clientKey(address);
      const mine = byClient.get(key) ?? 0;
      if (mine >= limits.maxPerClient) {
        throw new HttpProblem(
          'TOO_MANY_UPLOADS',
          `This address already has ${mine} upload(s) in progress; at most ${limits.maxPerClient} at once. Wait for one to finish.`,
          {
            headers: { 'Retry-After': '5' },
            extra: { limit: limits.maxPerClient },
          },
        );
      }
      if (total >= limits.maxConcurrent) {
        throw new HttpProblem(
          'UPLOADS_BUSY',
          `The server is reading ${total} uploads, its most at once. Try again shortly.`,
          {
            headers: { 'Retry-After': '5' },
            extra: { limit: limits.maxConcurrent },
          },
        );
      }
      total++;
      byClient.set(key, mine + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (byClient.get(key) ?? 1) - 1;
        if (left === 0) byClient.delete(key);
        else byClient.set(key, left);
      };
    },
  };
}
