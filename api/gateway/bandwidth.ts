import type { Readable } from 'node:stream';

/**
 * A token bucket of bytes a second, shared by every stream that takes from it. Bytes are taken after
 * they were read, so the bucket runs into debt; whoever took last waits until the debt is paid. The
 * total read over any span is thus at most the rate times the span, plus one burst, plus one chunk
 * per stream (each reads its next chunk when its own wait ends), however many streams share it.
 */
export interface Bandwidth {
  /** Takes `bytes`; returns how many ms the reader must wait before it reads again (0: go on). */
  take(bytes: number): number;
}

export function createBandwidth(bytesPerSecond: number, now: () => number = () => performance.now()): Bandwidth {
  // A quarter of a second's worth may be read at once, so a short body is never paused.
  const burst = bytesPerSecond / 4;
  let available = burst;
  let last = now();
  return {
    take(bytes) {
      const t = now();
      available = Math.min(burst, available + ((t - last) * bytesPerSecond) / 1000) - bytes;
      last = t;
      return available >= 0 ? 0 : Math.ceil((-available * 1000) / bytesPerSecond);
    },
  };
}

/**
 * Pauses a readable stream for reasons that end apart (the bandwidth's wait, a full disk buffer): it
 * resumes once every reason has ended. While `held`, the server, not the client, is why no byte
 * comes: a body's idle timeout must not count that time.
 */
export function pauser(stream: Readable) {
  const reasons = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  gateReads(stream, () => reasons.size === 0);
  const start = () => {
    if (reasons.size > 0 || stream.destroyed) return;
    stream.resume();
    restartReads(stream);
  };
  const end = (reason: string) => {
    if (reasons.delete(reason)) start();
  };
  const pause = (reason: string) => {
    reasons.add(reason);
    stream.pause();
    haltReads(stream);
  };
  return {
    get held() {
      return reasons.size > 0;
    },
    pause,
    end,
    /**
     * Reads now unless held, also where another stopped the reads: node's HTTP parser stops the
     * handle of a socket it reads when the request on it is paused, and resume() alone leaves it stopped.
     */
    start,
    /** Holds the stream for `ms` (nothing when 0). */
    wait(ms: number) {
      if (ms <= 0) return;
      clearTimeout(timer);
      pause('bandwidth');
      timer = setTimeout(() => end('bandwidth'), ms);
    },
    /** Drops every reason without resuming: the stream is done with. */
    stop() {
      clearTimeout(timer);
      reasons.clear();
    },
  };
}

type Handle = { reading?: boolean; readStop?: () => number; readStart?: () => number } | null | undefined;
const handleOf = (stream: Readable): Handle => (stream as { _handle?: Handle })._handle;

/**
 * A socket's pause() stops its 'data' events, not its reads: its handle reads on until the stream's
 * buffer is full, up to 64 KiB more each pause, which no budget sees. This stops them at once, as
 * net.Socket's own pause() does for sockets made with `onread`. A stream with no handle of its own
 * (a request) is left as it is, here and below.
 */
function haltReads(stream: Readable): void {
  const handle = handleOf(stream);
  if (!handle?.reading || !handle.readStop) return;
  handle.reading = false;
  handle.readStop();
}

/**
 * Starts the reads haltReads stopped, as Socket#_read's tryReadStart does. resume() alone does not:
 * a socket halted while its stream waited for a read never calls `_read` again (the stream still
 * counts that read as under way), so a lingering connection read nothing after its first wait and
 * its client was reset at LINGER_MS.
 */
function restartReads(stream: Readable): void {
  const handle = handleOf(stream);
  if (!handle || handle.reading || !handle.readStart) return;
  handle.reading = true;
  if (handle.readStart() !== 0) stream.destroy();
}

/**
 * While held, a socket's `_read` does nothing: the stream reads ahead to fill its buffer on its own
 * (after each 'data' event), which would restart a halted handle for one more chunk a pause, read
 * before the budget counts it. Only restartReads starts it again.
 */
function gateReads(stream: Readable, open: () => boolean): void {
  if (!handleOf(stream)) return;
  const read = stream._read;
  stream._read = function gatedRead(this: Readable, size: number) {
    if (open()) read.call(this, size);
  };
}
