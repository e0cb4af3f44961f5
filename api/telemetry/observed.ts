/** One finished request, as telemetry and the request log see it. */
export interface ObservedRequest {
  method: string;
  path: string;
  /** The query as sent, `?` included, only when the target has one (robots.txt rules may name it). */
  query?: string;
  host: string;
  userAgent: string;
  /** The status answered, or 499 when the client went away before the answer was sent. */
  status: number;
  durationMs: number;
  /** The client address as the socket saw it; never stored or logged in clear. */
  remoteAddress: string;
  /** HTTP Message Signature headers (Web Bot Auth), only when the request carries them. */
  signature?: { signature: string; signatureInput: string; signatureAgent: string | undefined; target: string };
}
