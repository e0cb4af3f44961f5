import { finish } from './normalise.ts';
import type { Parsed } from './types.ts';

// NCSA common and combined, as nginx (`log_format combined`) and Apache (`LogFormat ... combined`)
// write them by default, optionally led by Apache's vhost_combined `%v:%p`:
//   [vhost:port] $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent ["$http_referer" "$http_user_agent"]
const QUOTED = '"((?:[^"\\\\]|\\\\.)*)"';
// Where `[$time_local]` begins: `[10/Oct/2000:`.
const TIME_START = '\\[\\d{2}/\\w{3}/\\d{4}:';
// nginx writes $remote_user as the client sent it, spaces and all: any text up to the first space
// that a time follows. Its spaces are taken only where no time follows and the time only where one
// begins, so the engine never tries a later ` [` (one pass, whatever the line holds).
const USER = `(?:[^ ]| (?!${TIME_START}))+`;
// The virtual host has no colon: an IPv6 client ending in `:digits` is no `host:port`, even with
// a user of two words after it.
const LINE = new RegExp(
  `^(?:([^\\s:]+):\\d+ )?(\\S+) \\S+ ${USER} (?=${TIME_START})\\[([^\\]]+)\\] ${QUOTED} (\\d{3}|-) (?:\\d+|-)(?: ${QUOTED} ${QUOTED})?`,
);
const MONTHS: Record<string, string> = {
  Jan: '01',
  Feb: '02',
  Mar: '03',
  Apr: '04',
  May: '05',
  Jun: '06',
  Jul: '07',
  Aug: '08',
  Sep: '09',
  Oct: '10',
  Nov: '11',
  Dec: '12',
};
const TIME = /^(\d{2})\/(\w{3})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;

// The last time read and its answer: a log's consecutive lines mostly share their second, and
// parsing a date string was the largest part of reading a line.
let lastText = '';
let lastIso: string | null = null;

// The last minute read with a valid time in it (the text without its seconds) and its ISO form at
// second 00: the seconds of a minute (00-59, hours below 24) only change the ISO form's seconds, as
// the offset is whole minutes, so the next seconds of a minute parse no date.
let minuteText = '';
let minuteIso = '';
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** `10/Oct/2000:13:55:36 -0700` as ISO 8601, or null. */
export function clfTime(text: string): string | null {
  if (text === lastText) return lastIso;
  if (
    text.length === 26 &&
    minuteText !== '' &&
    text.startsWith(minuteText.slice(0, 18)) &&
    text.endsWith(minuteText.slice(18)) &&
    isDigit(text.charCodeAt(18)) &&
    text.charCodeAt(18) <= 0x35 &&
    isDigit(text.charCodeAt(19))
  ) {
    lastText = text;
    lastIso = `${minuteIso.slice(0, -7)}${text.slice(18, 20)}${minuteIso.slice(-5)}`;
    return lastIso;
  }
  const m = TIME.exec(text);
  const month = m && MONTHS[m[2]!];
  let iso: string | null = null;
  if (m && month) {
    const date = new Date(`${m[3]}-${month}-${m[1]}T${m[4]}:${m[5]}:${m[6]}${m[7]}${m[8]}:${m[9]}`);
    iso = Number.isNaN(date.getTime()) ? null : date.toISOString();
    if (iso !== null && m[4]! < '24' && m[5]! < '60' && m[6]! < '60') {
      minuteText = `${text.slice(0, 18)}${text.slice(20)}`;
      minuteIso = `${iso.slice(0, -7)}00${iso.slice(-5)}`;
    }
  }
  lastText = text;
  lastIso = iso;
  return iso;
}

const SIMPLE: Record<string, number> = { '"': 0x22, '\\': 0x5c, n: 0x0a, r: 0x0d, t: 0x09 };

/**
 * Undoes the escapes both servers write inside quotes: `\"`, `\\`, `\n`, `\t`, and `\xHH` for other
 * bytes (nginx escapes every byte of a UTF-8 character apart, so bytes are gathered, then decoded).
 */
export function unescapeQuoted(text: string): string {
  if (!text.includes('\\')) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      const next = text[i + 1]!;
      if (next === 'x' && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 2, i + 4))) {
        bytes.push(parseInt(text.slice(i + 2, i + 4), 16));
        i += 3;
        continue;
      }
      if (next in SIMPLE) {
        bytes.push(SIMPLE[next]!);
        i++;
        continue;
      }
    }
    bytes.push(...Buffer.from(c, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Whether a line has the shape of common or combined log format (for recognising a file). */
export const looksCombined = (text: string): boolean => LINE.test(text);

/** One common or combined log line. */
export function parseCombined(text: string): Parsed | null {
  if (text.trim() === '') return null;
  const m = LINE.exec(text);
  if (!m) return { skip: 'unparseable' };
  // The captures read by index, the request cut at its spaces without an array (both were a tenth of reading a line).
  const referer = m[6];
  const userAgent = m[7];
  // `"$request"` is `METHOD target PROTOCOL`: two or three words between single spaces; `-` or
  // bytes of a TLS handshake are not a request.
  const request = unescapeQuoted(m[4]!);
  const first = request.indexOf(' ');
  const second = first === -1 ? -1 : request.indexOf(' ', first + 1);
  if (first === -1 || (second !== -1 && request.indexOf(' ', second + 1) !== -1)) return { skip: 'not-a-request' };
  const when = clfTime(m[3]!);
  if (!when) return { skip: 'bad-time' };
  return finish({
    method: request.slice(0, first),
    target: second === -1 ? request.slice(first + 1) : request.slice(first + 1, second),
    host: m[1] ?? '',
    userAgent: userAgent === undefined ? '' : unescapeQuoted(userAgent),
    status: m[5],
    iso: when,
    clientAddress: m[2],
    referer: referer === undefined ? '' : unescapeQuoted(referer),
  });
}
