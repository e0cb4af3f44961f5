import { createServer } from 'node:net';

// The control of bench:hostile's bandwidth floods: the least a server can do with such traffic. It
// reads a request's head, answers 429 at once and closes, discarding whatever still comes, with no
// HTTP parser, no routes and no limits. The same attack sent here instead of to the real server
// shows what the flood's bytes alone cost the machine (the ordinary client keeps timing the real,
// idle, server meanwhile).
const ANSWER =
  'HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/problem+json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}';
const server = createServer((socket) => {
  let head: string | null = '';
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk) => {
    if (head === null) return;
    head += chunk.toString('latin1');
    if (!head.includes('\r\n\r\n')) return;
    head = null;
    socket.end(ANSWER);
    setTimeout(() => socket.destroy(), 5000).unref();
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as { port: number }).port }));
