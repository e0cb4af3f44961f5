import { createHook } from 'node:async_hooks';

// Imported before node-device-detector (person-client.ts), which builds thousands of one-key
// objects while it loads: V8's table of the shapes that grow from `{}` is then full (1,536
// entries) until a full collection clears it. Node makes every process.nextTick entry such an
// object ({[async_id]: ..., [trigger_id]: ..., callback, args}); while the table is full, an entry
// whose shapes are not alive gets shapes of its own, one per entry. Requests served in that window
// (503 STARTING while the service starts under load) leave nextTick's caches megamorphic for the
// life of the process: every entry is then built in the runtime, a tenth of a static read's CPU
// (docs/decisions.md, "One nextTick entry kept alive"). One entry kept alive keeps its shapes in the table.
let kept: object | undefined;
const hook = createHook({
  init(_asyncId, type, _triggerAsyncId, resource) {
    if (type === 'TickObject') kept ??= resource;
  },
});
hook.enable();
process.nextTick(() => {});
hook.disable();

/** The entry kept (exported so that it stays reachable). */
export const keptTickObject = kept;
