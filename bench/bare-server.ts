import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

// The baseline: a bare node:http server sending one file's bytes from memory, with the headers in
// BARE_HEADERS (JSON [name, value] pairs, in order), so that it sends the same bytes as the server
// it is compared with.
const [file] = process.argv.slice(2) as [string];
const body = readFileSync(file);
const headers = [
  ...(JSON.parse(process.env.BARE_HEADERS ?? '[]') as [string, string][]).flat(),
  'content-length',
  String(body.length),
];
const server = createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});
server.listen(Number(process.env.PORT), '127.0.0.1');
