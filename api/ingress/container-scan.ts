// A cheap walk of an audio container's structure, run before music-metadata: it counts the elements
// (EBML elements, MP4 boxes, FLAC metadata blocks and comments, Ogg pages, ID3 frames, RIFF/AIFF
// chunks) the parser would visit one by one, and stops at the cap. music-metadata spends microseconds
// per element, so a crafted file of tiny elements (4 MB of 2-byte EBML Voids is two million of them)
// costs seconds there and a few milliseconds here before it is refused.

/** Bytes of a file by offset: fewer than asked at its end, none past it. */
export interface ByteSource {
  readonly size: number;
  bytes(at: number, length: number): Uint8Array;
}

export interface ContainerScan {
  /** Elements counted, at most `cap + 1`. */
  elements: number;
  /** What the elements are, for the problem's detail ("EBML elements", "MP4 boxes"...). */
  unit: string;
  /** True when the file holds more than `cap` elements. */
  overCap: boolean;
}

/** A ByteSource over bytes in memory. */
export const bufferSource = (buffer: Uint8Array): ByteSource => ({
  size: buffer.length,
  bytes: (at, length) => buffer.subarray(at, Math.min(buffer.length, at + length)),
});

const u32be = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
const u32le = (b: Uint8Array, at: number) =>
  ((b[at + 3]! << 24) | (b[at + 2]! << 16) | (b[at + 1]! << 8) | b[at]!) >>> 0;
const syncsafe = (b: Uint8Array, at: number) =>
  ((b[at]! & 127) << 21) | ((b[at + 1]! & 127) << 14) | ((b[at + 2]! & 127) << 7) | (b[at + 3]! & 127);
const text = (b: Uint8Array, at: number, length: number) => String.fromCharCode(...b.subarray(at, at + length));

/** Counts elements as a walk finds them; `add` says false once past the cap, so the walk stops. */
function counter(cap: number, unit: string) {
  const scan: ContainerScan = { elements: 0, unit, overCap: false };
  return {
    scan,
    add(n = 1): boolean {
      scan.elements = Math.min(cap + 1, scan.elements + n);
      if (scan.elements > cap) scan.overCap = true;
      return !scan.overCap;
    },
  };
}

// Matroska master elements music-metadata descends into (its DTD); any other element (Cluster and
// Cues among them, which it skips whole) is stepped over.
const EBML_MASTERS = new Set([
  0x1a45dfa3, 0x18538067, 0x114d9b74, 0x4dbb, 0x1549a966, 0x1654ae6b, 0xae, 0xe0, 0xe1, 0x6d80, 0x6240, 0x5035,
  0x1043a770, 0x45b9, 0xb6, 0x80, 0x1254c367, 0x7373, 0x63c0, 0x67c8, 0x1941a469, 0x61a7, 0x7e5b, 0x7e7b, 0x5034,
  0x5031, 0x6624, 0x8f,
]);

/** An EBML variable-length integer at `at`: its value (marker bit removed unless `keepMarker`) and length. */
function vint(
  b: Uint8Array,
  at: number,
  keepMarker: boolean,
): { value: number; length: number; unknown: boolean } | null {
  const first = b[at];
  if (first === undefined || first === 0) return null;
  const length = Math.clz32(first) - 23;
  if (at + length > b.length) return null;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + b[at + i]!;
    if (b[at + i] !== 0xff) allOnes = false;
  }
  return { value, length, unknown: !keepMarker && allOnes };
}

function scanMatroska(source: ByteSource, cap: number): ContainerScan {
  const { scan, add } = counter(cap, 'EBML elements');
  // A stack of the ends of the masters the walk is in; the file's end is the outermost.
  const ends = [source.size];
  let at = 0;
  while (at < source.size) {
    while (ends.length > 1 && at >= ends[ends.length - 1]!) ends.pop();
    const head = source.bytes(at, 12);
    const id = vint(head, 0, true);
    const size = id && vint(head, id.length, false);
    if (!id || !size) break;
    if (!add()) break;
    const body = at + id.length + size.length;
    if (EBML_MASTERS.has(id.value)) {
      // A master of unknown size lasts to the end of its parent.
      ends.push(size.unknown ? ends[ends.length - 1]! : Math.min(body + size.value, ends[ends.length - 1]!));
      at = body;
    } else if (size.unknown) break;
    else at = body + size.value;
  }
  return scan;
}

// ISO BMFF boxes whose payload is more boxes (music-metadata reads them all); `meta` has 4 bytes first.
const MP4_CONTAINERS = new Set([
  'moov',
  'trak',
  'mdia',
  'minf',
  'stbl',
  'udta',
  'meta',
  'ilst',
  'edts',
  'dinf',
  'moof',
  'traf',
  'mvex',
]);

function scanMp4(source: ByteSource, cap: number): ContainerScan {
  const { scan, add } = counter(cap, 'MP4 boxes');
  const walk = (from: number, to: number, depth: number, parent: string): boolean => {
    let at = from;
    while (at + 8 <= to) {
      const head = source.bytes(at, 16);
      if (head.length < 8) return true;
      if (!add()) return false;
      let size = u32be(head, 0);
      let header = 8;
      if (size === 1 && head.length >= 16) {
        size = u32be(head, 8) * 2 ** 32 + u32be(head, 12);
        header = 16;
      } else if (size === 0) size = to - at;
      if (size < header) return true;
      const type = text(head, 4, 4);
      const end = Math.min(at + size, to);
      // Items of an iTunes `ilst` are boxes holding `data` boxes.
      if (depth < 16 && (MP4_CONTAINERS.has(type) || parent === 'ilst'))
        if (!walk(at + header + (type === 'meta' ? 4 : 0), end, depth + 1, type)) return false;
      at = end;
    }
    return true;
  };
  walk(0, source.size, 0, '');
  return scan;
}

function scanFlac(source: ByteSource, cap: number): ContainerScan {
  const { scan, add } = counter(cap, 'FLAC metadata blocks and comments');
  let at = 4;
  for (;;) {
    const head = source.bytes(at, 4);
    if (head.length < 4 || !add()) break;
    const type = head[0]! & 0x7f;
    const length = (head[1]! << 16) | (head[2]! << 8) | head[3]!;
    if (type === 4) {
      // VORBIS_COMMENT: each comment is read on its own; its declared count is what the parser loops over.
      const vendor = u32le(source.bytes(at + 4, 4), 0);
      const count = source.bytes(at + 8 + vendor, 4);
      if (count.length === 4 && !add(Math.min(u32le(count, 0), length / 4))) break;
    }
    if (head[0]! & 0x80) break;
    at += 4 + length;
  }
  return scan;
}

function scanOgg(source: ByteSource, cap: number): ContainerScan {
  const { scan, add } = counter(cap, 'Ogg pages');
  let at = 0;
  for (;;) {
    const head = source.bytes(at, 27);
    if (head.length < 27 || text(head, 0, 4) !== 'OggS' || !add()) break;
    const segments = source.bytes(at + 27, head[26]!);
    let body = 0;
    for (const lacing of segments) body += lacing;
    at += 27 + head[26]! + body;
  }
  return scan;
}

function scanId3(source: ByteSource, cap: number): ContainerScan {
  const { scan, add } = counter(cap, 'ID3 frames');
  let tag = 0;
  // Tags may follow one another (music-metadata reads each).
  for (;;) {
    const head = source.bytes(tag, 10);
    if (head.length < 10 || text(head, 0, 3) !== 'ID3') break;
    const version = head[3]!;
    const end = tag + 10 + syncsafe(head, 6);
    const frameHead = version === 2 ? 6 : 10;
    let at = tag + 10;
    while (at + frameHead <= end) {
      const frame = source.bytes(at, frameHead);
      if (frame.length < frameHead || frame[0] === 0) break; // padding
      if (!add()) return scan;
      const size =
        version === 2
          ? (frame[3]! << 16) | (frame[4]! << 8) | frame[5]!
          : version === 4
            ? syncsafe(frame, 4)
            : u32be(frame, 4);
      at += frameHead + size;
    }
    tag = end + (head[5]! & 0x10 ? 10 : 0);
  }
  return scan;
}

/** RIFF (WAV) and AIFF chunks: little-endian sizes for RIFF, big-endian for FORM. */
function scanChunks(source: ByteSource, cap: number, bigEndian: boolean): ContainerScan {
  const { scan, add } = counter(cap, bigEndian ? 'AIFF chunks' : 'RIFF chunks');
  let at = 12;
  for (;;) {
    const head = source.bytes(at, 8);
    if (head.length < 8 || !add()) break;
    const size = bigEndian ? u32be(head, 4) : u32le(head, 4);
    at += 8 + size + (size % 2);
  }
  return scan;
}

/**
 * The elements of the container `container` (as audioContainerOf names it) that a parse would walk,
 * counted up to `cap`; null for a container this walk does not know (the parse's CPU budget bounds those).
 */
export function scanContainer(source: ByteSource, container: string, cap: number): ContainerScan | null {
  switch (container) {
    case 'Matroska':
      return scanMatroska(source, cap);
    case 'MP4':
      return scanMp4(source, cap);
    case 'FLAC':
      return scanFlac(source, cap);
    case 'Ogg':
      return scanOgg(source, cap);
    case 'ID3':
      return scanId3(source, cap);
    case 'WAVE':
      return scanChunks(source, cap, false);
    case 'AIFF':
      return scanChunks(source, cap, true);
    default:
      return null;
  }
}
