// Small real audio files built byte by byte, so the upload tests parse genuine containers.

const u32be = (n: number) => Buffer.from([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
const u16be = (n: number) => Buffer.from([(n >>> 8) & 255, n & 255]);
const u32le = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u16le = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
};

/** A RIFF chunk: id, little-endian size, data, padded to an even length. */
function chunk(id: string, data: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(id, 'latin1'),
    u32le(data.length),
    data,
    data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0),
  ]);
}

/**
 * The head of an 8 kHz mono 8-bit PCM WAV with RIFF INFO tags INAM (title) and IART (artist), up to
 * and with the size of its data chunk: `dataBytes` of samples follow it (a bench streams 49 MB).
 */
export function wavHead(tags: { title?: string; artist?: string }, dataBytes: number): Buffer {
  const fmt = Buffer.concat([u16le(1), u16le(1), u32le(8000), u32le(8000), u16le(1), u16le(8)]);
  const info = Buffer.concat([
    Buffer.from('INFO'),
    ...(tags.title ? [chunk('INAM', Buffer.from(`${tags.title}\0`, 'latin1'))] : []),
    ...(tags.artist ? [chunk('IART', Buffer.from(`${tags.artist}\0`, 'latin1'))] : []),
  ]);
  const head = Buffer.concat([
    Buffer.from('WAVE'),
    chunk('fmt ', fmt),
    chunk('LIST', info),
    Buffer.from('data'),
    u32le(dataBytes),
  ]);
  return Buffer.concat([Buffer.from('RIFF'), u32le(head.length + dataBytes + (dataBytes % 2)), head]);
}

/** 8 kHz mono 8-bit PCM WAV of `seconds` with RIFF INFO tags INAM (title) and IART (artist). */
export function wavWithInfo(tags: { title?: string; artist?: string }, seconds: number): Buffer {
  const samples = Buffer.alloc(8000 * seconds, 0x80);
  return Buffer.concat([
    wavHead(tags, samples.length),
    samples,
    samples.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0),
  ]);
}

const syncsafe = (n: number) => Buffer.from([(n >> 21) & 127, (n >> 14) & 127, (n >> 7) & 127, n & 127]);

/** An MP3: an ID3v2.3 tag with text frames (TIT2, TPE1, TLEN, TSRC...) and silent MPEG-1 Layer III frames. */
export function mp3WithId3(frames: Record<string, string>): Buffer {
  const id3frames = Buffer.concat(
    Object.entries(frames).map(([id, text]) => {
      const content = Buffer.concat([Buffer.from([0]), Buffer.from(text, 'latin1')]);
      return Buffer.concat([Buffer.from(id, 'latin1'), u32be(content.length), Buffer.alloc(2), content]);
    }),
  );
  const header = Buffer.concat([Buffer.from('ID3'), Buffer.from([3, 0, 0]), syncsafe(id3frames.length)]);
  // 128 kbit/s, 44.1 kHz: 417-byte frames.
  const mpegFrame = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413)]);
  return Buffer.concat([header, id3frames, ...Array.from({ length: 40 }, () => mpegFrame)]);
}

const box = (type: string, ...payload: Buffer[]) => {
  const data = Buffer.concat(payload);
  return Buffer.concat([u32be(8 + data.length), Buffer.from(type, 'latin1'), data]);
};
const fullBox = (type: string, flags: number, ...payload: Buffer[]) => box(type, u32be(flags), ...payload);

/** An MP4 (M4A) whose one audio track has the sample entry `format` ('enca' is encrypted audio, 'mp4a' plain). */
export function mp4WithSampleEntry(format: string, durationMs = 205_000): Buffer {
  const matrix = Buffer.concat([
    u32be(0x10000),
    u32be(0),
    u32be(0),
    u32be(0),
    u32be(0x10000),
    u32be(0),
    u32be(0),
    u32be(0),
    u32be(0x40000000),
  ]);
  const mvhd = fullBox(
    'mvhd',
    0,
    u32be(0),
    u32be(0),
    u32be(1000),
    u32be(durationMs),
    u32be(0x10000),
    u16be(0x100),
    Buffer.alloc(10),
    matrix,
    Buffer.alloc(24),
    u32be(2),
  );
  const tkhd = fullBox(
    'tkhd',
    7,
    u32be(0),
    u32be(0),
    u32be(1),
    u32be(0),
    u32be(durationMs),
    Buffer.alloc(8),
    u16be(0),
    u16be(0),
    u16be(0x100),
    u16be(0),
    matrix,
    u32be(0),
    u32be(0),
  );
  const mdhd = fullBox(
    'mdhd',
    0,
    u32be(0),
    u32be(0),
    u32be(44100),
    u32be(Math.round((durationMs / 1000) * 44100)),
    u16be(0x55c4),
    u16be(0),
  );
  const hdlr = fullBox('hdlr', 0, u32be(0), Buffer.from('soun'), Buffer.alloc(12), Buffer.from([0]));
  const entry = box(
    format,
    Buffer.alloc(6),
    u16be(1),
    u16be(0),
    u16be(0),
    u32be(0),
    u16be(2),
    u16be(16),
    u16be(0),
    u16be(0),
    u32be(44100 << 16),
  );
  const stbl = box(
    'stbl',
    fullBox('stsd', 0, u32be(1), entry),
    fullBox('stts', 0, u32be(0)),
    fullBox('stsc', 0, u32be(0)),
    fullBox('stsz', 0, u32be(0), u32be(0)),
    fullBox('stco', 0, u32be(0)),
  );
  const minf = box('minf', fullBox('smhd', 0, u16be(0), u16be(0)), stbl);
  const moov = box('moov', mvhd, box('trak', tkhd, box('mdia', mdhd, hdlr, minf)));
  const ftyp = box('ftyp', Buffer.from('M4A '), u32be(0), Buffer.from('M4A isom'));
  return Buffer.concat([ftyp, moov, box('mdat')]);
}

/** The crafted containers of the hostile tests and bench: each a valid start followed by tiny elements. */
export const CRAFTED_CONTAINERS = ['Matroska', 'MP4', 'FLAC', 'Ogg', 'ID3'] as const;
export type CraftedContainer = (typeof CRAFTED_CONTAINERS)[number];

/** An Ogg page of one packet (at most 255 bytes), its CRC left zero (readers do not check it). */
function oggPage(packet: Buffer, sequence: number, headerType = 0): Buffer {
  const head = Buffer.alloc(27);
  head.write('OggS', 0, 'latin1');
  head[5] = headerType;
  head.writeUInt32LE(1, 14);
  head.writeUInt32LE(sequence, 18);
  head[26] = 1;
  return Buffer.concat([head, Buffer.from([packet.length]), packet]);
}

/**
 * A file of about `bytes` bytes that starts as `kind` and then holds nothing but the smallest
 * elements its format has: 2-byte EBML Void elements, 8-byte MP4 `free` atoms, 4-byte FLAC padding
 * blocks, 28-byte Ogg pages, 11-byte ID3 frames. What an attacker sends to make a parser loop.
 */
export function craftedContainer(kind: CraftedContainer, bytes: number): Buffer {
  const fill = (head: Buffer, element: Buffer, tail: Buffer = Buffer.alloc(0)) => {
    const count = Math.max(0, Math.floor((bytes - head.length - tail.length) / element.length));
    return Buffer.concat([head, Buffer.alloc(count * element.length).fill(element), tail]);
  };
  switch (kind) {
    case 'Matroska': {
      const docType = Buffer.concat([Buffer.from([0x42, 0x82, 0x84]), Buffer.from('webm')]);
      const ebml = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x80 | docType.length]), docType]);
      // A Segment of unknown size, then Void elements (ID 0xEC, size 0).
      const segment = Buffer.from([0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
      return fill(Buffer.concat([ebml, segment]), Buffer.from([0xec, 0x80]));
    }
    case 'MP4': {
      const ftyp = box('ftyp', Buffer.from('M4A '), u32be(0), Buffer.from('M4A isom'));
      return fill(ftyp, box('free'));
    }
    case 'FLAC': {
      // STREAMINFO: 44.1 kHz stereo 16-bit, one second; then PADDING blocks of no bytes, the last flagged.
      const streamInfo = Buffer.alloc(34);
      streamInfo.writeUInt16BE(4096, 0);
      streamInfo.writeUInt16BE(4096, 2);
      streamInfo.writeUIntBE((44100 << 4) | (1 << 1) | 0, 10, 3);
      streamInfo[13] = (15 << 4) | 0;
      streamInfo.writeUInt32BE(44100, 14);
      const head = Buffer.concat([Buffer.from('fLaC'), Buffer.from([0, 0, 0, 34]), streamInfo]);
      return fill(head, Buffer.from([1, 0, 0, 0]), Buffer.from([0x81, 0, 0, 0]));
    }
    case 'Ogg': {
      const opusHead = Buffer.concat([
        Buffer.from('OpusHead'),
        Buffer.from([1, 2]),
        u16le(312),
        u32le(48000),
        u16le(0),
        Buffer.from([0]),
      ]);
      const opusTags = Buffer.concat([Buffer.from('OpusTags'), u32le(0), u32le(0)]);
      const head = Buffer.concat([oggPage(opusHead, 0, 2), oggPage(opusTags, 1)]);
      const count = Math.max(0, Math.floor((bytes - head.length) / 28));
      const pages = Buffer.alloc(count * 28);
      for (let i = 0; i < count; i++) oggPage(Buffer.alloc(0), i + 2).copy(pages, i * 28);
      return Buffer.concat([head, pages]);
    }
    case 'ID3': {
      // One ID3v2.3 tag of 1-byte TXXX frames, then MPEG frames.
      const mpegFrame = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413)]);
      const frame = Buffer.concat([Buffer.from('TXXX'), u32be(1), Buffer.alloc(2), Buffer.from([0])]);
      const count = Math.max(0, Math.floor((bytes - 10 - 4 * mpegFrame.length) / frame.length));
      const frames = Buffer.alloc(count * frame.length).fill(frame);
      const header = Buffer.concat([Buffer.from('ID3'), Buffer.from([3, 0, 0]), syncsafe(frames.length)]);
      return Buffer.concat([header, frames, mpegFrame, mpegFrame, mpegFrame, mpegFrame]);
    }
  }
}
