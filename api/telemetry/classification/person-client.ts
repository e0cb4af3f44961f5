// First: keeps node's nextTick entries fast while the parser below loads (see tick-shape.ts).
import './tick-shape.ts';
import DeviceDetector from 'node-device-detector';

// A browser/app parser's view of a User-Agent (Matomo device-detector's client list, through its
// npm port), asked only when our table names no bot and the only evidence is a heuristic (isbot, a
// name read off the string): a device model (`Android 7.0; Discovery_XT`) or an app's name
// (`Podfriend 2.0 ios`, `Yandex.Music/...`) is never a bot's name. The parser takes ~20 µs at the
// median and up to ~1 ms, so its time is budgeted: past the budget the heuristic answers alone.

/** Client types that are a person's: browsers, apps, media players, mail and calendar clients. */
const PERSON = new Set(['browser', 'mobile app', 'mediaplayer', 'pim']);
/** Operating systems that only people's devices report (a bot says Linux or Windows as often as a person). */
const PERSONAL_OS = new Set([
  'iOS',
  'iPadOS',
  'Android',
  'HarmonyOS',
  'KaiOS',
  'Windows Phone',
  'Fire OS',
  'watchOS',
  'tvOS',
  'Tizen',
  'webOS',
]);

let detector: DeviceDetector | null = null;
/** One parser per process (its regex tables take ~35 ms and some MB to build). */
function parser(): DeviceDetector {
  detector ??= new DeviceDetector({
    clientIndexes: true,
    osIndexes: true,
    deviceIndexes: false,
    deviceAliasCode: false,
    deviceInfo: false,
    maxUserAgentSize: 512,
  });
  return detector;
}

/** Parser time allowed per second, in ms (5% of one core), against floods of rotating strings. */
export const PERSON_CLIENT_BUDGET_MS = 50;

/** Answers "is this a person's browser or app?", or null when the budget of this second is spent. */
export function createPersonClientCheck(
  budgetMs = PERSON_CLIENT_BUDGET_MS,
  now: () => number = performance.now.bind(performance),
) {
  parser();
  let windowStart = -Infinity;
  let spent = 0;
  let calls = 0;
  const check = (ua: string): boolean | null => {
    const start = now();
    if (start - windowStart >= 1000) {
      windowStart = start;
      spent = 0;
    }
    if (spent >= budgetMs) return null;
    calls++;
    try {
      const client = parser().parseClient(ua) as { type?: string } | null;
      if (client?.type && PERSON.has(client.type)) return true;
      const os = parser().parseOs(ua) as { name?: string } | null;
      return !!os?.name && PERSONAL_OS.has(os.name) && !/https?:|@|\bbot\b/i.test(ua);
    } finally {
      spent += now() - start;
    }
  };
  /** Parser calls so far and the time spent in this second's window, for tests and benchmarks. */
  check.stats = () => ({ calls, spentMs: spent });
  return check;
}
export type PersonClientCheck = ReturnType<typeof createPersonClientCheck>;
