import { writeFileSync } from 'node:fs';

// Loaded into a bench's server (node --expose-gc --import=./bench/memory-preload.ts): on SIGUSR2 a
// full collection, then the heap in use and the memory outside it (ArrayBuffers, where the
// embedded store keeps its records) written as JSON to BENCH_MEMORY_FILE. RSS alone counts garbage
// and heap the process grew to once (a start's reads) and has not given back.
process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const { heapUsed, external, rss } = process.memoryUsage();
  writeFileSync(process.env.BENCH_MEMORY_FILE!, JSON.stringify({ heapUsed, external, rss }));
});
