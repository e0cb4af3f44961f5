// Which audio container a body starts with, by its signature: a body no reader recognises is not
// audio (415 NOT_AUDIO). music-metadata alone is too lenient for this: given `audio/mpeg`, it
// scans random bytes for MPEG frame syncs and finds some.

const ascii = (bytes: Uint8Array, at: number, text: string) =>
  bytes.length >= at + text.length && [...text].every((ch, i) => bytes[at + i] === ch.charCodeAt(0));

const BITRATES_KBPS = {
  v1: [
    [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  ],
  v2: [
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  ],
};
const SAMPLE_RATES: Record<number, number[]> = {
  3: [44100, 48000, 32000],
  2: [22050, 24000, 16000],
  0: [11025, 12000, 8000],
};
const isSync = (bytes: Uint8Array, at: number) => bytes[at] === 0xff && (bytes[at + 1]! & 0xe0) === 0xe0;

/**
 * The length in bytes of the MPEG audio or ADTS frame whose header is at `at`, or null when the
 * header is not valid. Free-format frames (bitrate index 0) have no computable length: 0.
 */
export function mpegFrameLength(bytes: Uint8Array, at = 0): number | null {
  if (bytes.length < at + 7 || !isSync(bytes, at)) return null;
  const [b1, b2, b3, b4, b5] = [bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!, bytes[at + 4]!, bytes[at + 5]!];
  const version = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  if (layer === 0) {
    // ADTS (AAC): 12-bit sync, layer 00, a sampling index below 13, a 13-bit frame length.
    if ((b1 & 0xf0) !== 0xf0 || ((b2 >> 2) & 0xf) > 12) return null;
    const length = ((b3 & 3) << 11) | (b4 << 3) | (b5 >> 5);
    return length >= 7 ? length : null;
  }
  if (version === 1) return null;
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  if (bitrateIndex === 15 || rateIndex === 3) return null;
  if (bitrateIndex === 0) return 0;
  const layerNo = 4 - layer; // 1, 2 or 3
  const kbps = (version === 3 ? BITRATES_KBPS.v1 : BITRATES_KBPS.v2)[layerNo - 1]![bitrateIndex]!;
  const rate = SAMPLE_RATES[version]![rateIndex]!;
  const padding = (b2 >> 1) & 1;
  if (layerNo === 1) return (Math.floor((12 * kbps * 1000) / rate) + padding) * 4;
  const perFrame = layerNo === 3 && version !== 3 ? 72 : 144;
  return Math.floor((perFrame * kbps * 1000) / rate) + padding;
}

/** True when a raw MPEG/ADTS stream starts at 0: a valid header, and the next frame follows where it says. */
function startsMpegStream(bytes: Uint8Array): boolean {
  const length = mpegFrameLength(bytes);
  if (length === null) return false;
  if (length === 0 || bytes.length <= length + 1) return true;
  return isSync(bytes, length) && mpegFrameLength(bytes, length) !== null;
}

/** The audio container a body starts with (the signatures music-metadata reads), or null. */
export function audioContainerOf(bytes: Uint8Array): string | null {
  if ((ascii(bytes, 0, 'RIFF') || ascii(bytes, 0, 'RF64') || ascii(bytes, 0, 'BW64')) && ascii(bytes, 8, 'WAVE'))
    return 'WAVE';
  if (ascii(bytes, 0, 'FORM') && (ascii(bytes, 8, 'AIFF') || ascii(bytes, 8, 'AIFC'))) return 'AIFF';
  if (ascii(bytes, 0, 'ID3')) return 'ID3';
  if (ascii(bytes, 0, 'fLaC')) return 'FLAC';
  if (ascii(bytes, 0, 'OggS')) return 'Ogg';
  // ISO BMFF: `ftyp` first as a rule; older QuickTime-style files may open with another top-level box.
  if (['ftyp', 'moov', 'mdat', 'wide', 'free', 'skip'].some((box) => ascii(bytes, 4, box))) return 'MP4';
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return 'Matroska';
  if ([0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11].every((b, i) => bytes[i] === b)) return 'ASF';
  if (ascii(bytes, 0, 'MAC ')) return 'APE';
  if (ascii(bytes, 0, 'wvpk')) return 'WavPack';
  if (ascii(bytes, 0, 'MPCK') || ascii(bytes, 0, 'MP+')) return 'Musepack';
  if (ascii(bytes, 0, 'DSD ')) return 'DSF';
  if (ascii(bytes, 0, 'FRM8')) return 'DSDIFF';
  if (startsMpegStream(bytes)) return 'MPEG';
  return null;
}

/**
 * The size of a WAV file's `data` chunk: what it declares and how many of those bytes the file
 * holds; null when the RIFF chunk list has no data chunk. `bytes` may be the file's head only, with
 * `total` the size of the whole file.
 */
export function wavDataChunk(bytes: Uint8Array, total = bytes.length): { declared: number; present: number } | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 12;
  while (at + 8 <= bytes.length) {
    const size = view.getUint32(at + 4, true);
    if (ascii(bytes, at, 'data')) return { declared: size, present: Math.max(0, Math.min(size, total - at - 8)) };
    at += 8 + size + (size % 2);
  }
  return null;
}
