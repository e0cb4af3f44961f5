import { isIP } from 'node:net';
import type { LogLine, Parsed } from './types.ts';
import { REFERER_MAX_CHARS, utmSourceOf } from '../referrals/referrals.ts';

/** The raw fields a parser found, before the common checks. */
export interface RawLine {
  method: unknown;
  /** Path, path with query, or an absolute URL. */
  target: unknown;
  host?: unknown;
  userAgent?: unknown;
  status: unknown;
  /** A Date, an ISO string, or a number (seconds, milliseconds, microseconds or nanoseconds since 1970). */
  time?: unknown;
  clientAddress?: unknown;
  referer?: unknown;
  /** The query, when the format logs it apart from the target (CloudFront's cs-uri-query). */
  query?: unknown;
  /** The time already as toISOString writes it (the combined parser's), instead of `time`. */
  iso?: string;
}

const METHOD = /^[A-Z]{3,10}$/;
const STATUS = /^\d{3}$/;
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
// `-` is how the text formats write an absent value.
const present = (v: unknown): string => {
  const s = str(v).trim();
  return s === '-' ? '' : s;
};

/** Epoch numbers by magnitude: Cloudflare's unix, unixnano, and the milliseconds drains send. */
export function timeOf(value: unknown): Date | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value;
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : null;
  if (n !== null) {
    const ms = n >= 1e17 ? n / 1e6 : n >= 1e14 ? n / 1e3 : n >= 1e11 ? n : n * 1000;
    const date = new Date(ms);
    return Number.isNaN(date.getTime()) ? null : date;
  }
  if (typeof value !== 'string' || value === '') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

// The last time normalised and its ISO form: consecutive lines mostly share it (a Date parsed and
// printed for each line was a tenth of reading one).
let lastTime: unknown = undefined;
let lastIso: string | null = null;
function isoOf(value: unknown): string | null {
  if (value instanceof Date || value !== lastTime) {
    const time = timeOf(value);
    lastIso = time ? time.toISOString() : null;
    lastTime = value instanceof Date ? undefined : value;
  }
  return lastIso;
}

/** The path of a request target (query dropped) and the host an absolute URL names. */
function targetOf(target: string): { path: string; host: string } | null {
  if (target.startsWith('/')) {
    const q = target.indexOf('?');
    const h = target.indexOf('#');
    const end = q === -1 ? h : h === -1 ? q : Math.min(q, h);
    return { path: end === -1 ? target : target.slice(0, end), host: '' };
  }
  if (/^https?:\/\//i.test(target)) {
    try {
      const url = new URL(target);
      return { path: url.pathname, host: url.host };
    } catch {
      return null;
    }
  }
  return null;
}

/** The common checks every format ends with, as the JSON line schema states them. */
export function finish(raw: RawLine): Parsed {
  const method = present(raw.method).toUpperCase();
  if (!METHOD.test(method)) return { skip: 'bad-method' };
  // Each field read once (a trim each; they were read twice).
  const targetText = present(raw.target);
  const target = targetOf(targetText);
  if (!target || target.path.length > 2048) return { skip: 'bad-path' };
  const statusText = typeof raw.status === 'number' ? '' : present(raw.status);
  const status = typeof raw.status === 'number' ? raw.status : STATUS.test(statusText) ? Number(statusText) : NaN;
  if (!Number.isInteger(status) || status < 100 || status > 599) return { skip: 'bad-status' };
  const line: LogLine = {
    method,
    path: target.path,
    host: (present(raw.host) || target.host).slice(0, 255),
    userAgent: present(raw.userAgent).slice(0, 1024),
    status,
  };
  if (raw.iso !== undefined) line.time = raw.iso;
  else if (raw.time !== undefined && raw.time !== null && present(raw.time) !== '') {
    const time = isoOf(raw.time);
    if (time === null) return { skip: 'bad-time' };
    line.time = time;
  }
  // Only a well-formed address can be verified; anything else (a proxy chain, `unknown`) is left out.
  const given = present(raw.clientAddress);
  const address =
    given.charCodeAt(0) === 0x5b || given.charCodeAt(given.length - 1) === 0x5d ? given.replace(/^\[|\]$/g, '') : given;
  if (isIP(address)) line.clientAddress = address;
  const referer = present(raw.referer);
  if (referer !== '') line.referer = referer.slice(0, REFERER_MAX_CHARS);
  const q = targetText.indexOf('?');
  const utm = utmSourceOf(q === -1 ? present(raw.query) : targetText.slice(q + 1).split('#')[0]!);
  if (utm) line.utmSource = utm;
  return { line };
}

/** An object of NDJSON or already parsed; null for a blank line, 'unparseable' for anything but an object. */
export function jsonRecord(record: string | Record<string, unknown>): Record<string, unknown> | 'unparseable' | null {
  if (typeof record !== 'string') return record;
  if (record.trim() === '') return null;
  try {
    const value: unknown = JSON.parse(record);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // falls through to the skip
  }
  return 'unparseable';
}
