import { readFileSync } from 'node:fs';

// Preloaded into the server by the hostile suite (NODE_OPTIONS --import, see `controlled` in
// control.ts), never by the service: on SIGUSR2 it reads one command from the file
// HOSTILE_CONTROL names, "gc" (a full collection, with --expose-gc) or "clock <ms>" (moves this
// process's clock forward), then prints "hostile-control: done <n>" so the test knows it ran.
const RealDate = Date;
let offset = 0;
class MovedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...(args as [string]));
  }
  static override now(): number {
    return RealDate.now() + offset;
  }
}
globalThis.Date = MovedDate as DateConstructor;

let done = 0;
process.on('SIGUSR2', () => {
  const [command, arg] = readFileSync(process.env.HOSTILE_CONTROL!, 'utf8').trim().split(/\s+/);
  if (command === 'gc') {
    const gc = (globalThis as { gc?: () => void }).gc!;
    gc();
    gc();
  } else if (command === 'clock') offset += Number(arg);
  process.stderr.write(`hostile-control: done ${++done}\n`);
});
