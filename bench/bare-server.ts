import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

// The baseline: a bare node:http server sending one file's bytes from memory.
const [file, type] = process.argv.slice(2) as [string, string];
const body = readFileSync(file);
const server = createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': body.length });
  res.end(body);
});
server.listen(Number(process.env.PORT), '127.0.0.1');
