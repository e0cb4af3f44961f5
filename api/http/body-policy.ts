/** What a route accepts as a request body. */
export interface BodyPolicy {
  /** Largest body in bytes for a media type. */
  limit(mediaType: string): number;
  /** Media types accepted, for the 415 message. */
  accepts: string[];
  /** True when the Content-Type (without parameters, lower case) is accepted. */
  allows(mediaType: string): boolean;
  /** True when a body of this type is an upload: streamed to a temporary file, never held in memory. */
  streams?(mediaType: string): boolean;
}

/** An upload body the gateway streamed to a temporary file; the file is removed once the answer is finished. */
export interface UploadedBody {
  /** Path of the temporary file holding the body as sent. */
  file: string;
  size: number;
  /** The Content-Type header as sent (multipart needs its boundary). */
  contentType: string;
  /** The media type without parameters, lower case. */
  mediaType: string;
  /** Aborts when the client goes: work for this upload (its parse) stops then. */
  signal?: AbortSignal;
}
