import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * Sends `X-Request-Id: id` with whatever headers the answer is written with. Not `res.setHeader`: a
 * header set that way turns node's `writeHead` of a prebuilt flat list (every static file) into a
 * merge of the list into an object, a third of the gateway's own cost of a static read; and the
 * shared answers kept from `res.getHeaders()` would carry one reader's id to the next.
 */
export function sendRequestId(res: ServerResponse, id: string): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    const at = rest.findIndex((r) => typeof r === 'object' && r !== null);
    // No headers given (node's own implicit writeHead, or a status message alone): set it on the response.
    if (at < 0) this.setHeader('X-Request-Id', id);
    else {
      const headers = rest[at] as OutgoingHttpHeaders | unknown[];
      rest[at] = !Array.isArray(headers)
        ? { ...headers, 'X-Request-Id': id }
        : Array.isArray(headers[0])
          ? [...headers, ['X-Request-Id', id]]
          : [...headers, 'X-Request-Id', id];
    }
    return writeHead.call(this, status, ...(rest as []));
  } as typeof res.writeHead;
}
