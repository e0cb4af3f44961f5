import { closeSync, createReadStream, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { parseBuffer, parseStream, type IAudioMetadata } from 'music-metadata';
import { DomainError } from '../problems/domain.ts';
import { bufferSource, scanContainer, type ByteSource } from './container-scan.ts';
import { audioContainerOf, wavDataChunk } from './sniff.ts';

// Encrypted MP4 sample entries (ISO/IEC 23001-7) and Apple's FairPlay protected audio.
const ENCRYPTED_CODECS = new Set(['<drms>', '<enca>', '<encv>']);
const READABLE = 'Send WAV, AIFF, MP3, MP4/M4A, FLAC, Ogg, Matroska/WebM or ASF, or JSON metadata.';
const PARSE_OPTIONS = { duration: true, skipCovers: true };
// Enough of a streamed upload to recognise its format and find a WAV data chunk.
const HEAD_BYTES = 64 * 1024;
/** Container elements (EBML elements, MP4 boxes, Ogg pages, ID3 frames...) a file may hold; AUDIO_MAX_ELEMENTS. */
export const DEFAULT_MAX_ELEMENTS = 20_000;
// The window the structure walk reads a file through.
const SCAN_WINDOW = 256 * 1024;

/** A file read by offset through a window of SCAN_WINDOW bytes (the walk's steps are small and forward). */
function fileSource(fd: number, size: number): ByteSource {
  const window = Buffer.alloc(SCAN_WINDOW);
  let start = 0;
  let filled = 0;
  return {
    size,
    bytes(at, length) {
      if (at < start || at + length > start + filled) {
        start = at;
        filled = at >= size ? 0 : readSync(fd, window, 0, Math.min(SCAN_WINDOW, size - at), at);
      }
      return window.subarray(at - start, Math.min(filled, at - start + length));
    },
  };
}

const noSamples = (detail: string) =>
  new DomainError('DURATION_INVALID', `${detail}: it holds no audio samples, so it has no duration.`);

/** A file read as audio but holding no samples is named precisely (never "a duration is required"). */
function checkHasSamples(
  head: Uint8Array,
  size: number,
  container: string,
  format: { duration?: number | undefined; numberOfSamples?: number | undefined },
): void {
  if (format.duration !== undefined && format.duration > 0) return;
  if (container === 'WAVE') {
    const data = wavDataChunk(head, size);
    if (data === null) throw noSamples('The WAV file has no data chunk');
    if (data.declared === 0) throw noSamples("The WAV file's data chunk is empty (0 bytes)");
    if (data.present === 0)
      throw noSamples(`The WAV file's data chunk declares ${data.declared} bytes but the file ends before any of them`);
  }
  if (format.duration === 0 || format.numberOfSamples === 0)
    throw noSamples(`The ${container} file measures 0 seconds`);
}

/**
 * Reads an uploaded audio file's tags and duration with music-metadata, as plain metadata fields
 * for the ingress pipeline. A body that starts with no audio signature is a 415.
 */
export function readAudioFile(
  bytes: Uint8Array,
  mimeType: string,
  maxElements = DEFAULT_MAX_ELEMENTS,
): Promise<Record<string, unknown>> {
  return readAudio(
    bytes,
    bytes.length,
    mimeType,
    (container) => checkStructure(bufferSource(bytes), container, maxElements),
    () => parseBuffer(bytes, { mimeType, size: bytes.length }, PARSE_OPTIONS),
  );
}

/** Refuses (422 AUDIO_TOO_COMPLEX) a container with more elements than a parse is allowed to walk. */
function checkStructure(source: ByteSource, container: string, maxElements: number): void {
  const scan = scanContainer(source, container, maxElements);
  if (scan?.overCap)
    throw new DomainError(
      'AUDIO_TOO_COMPLEX',
      `The ${container} file holds more than ${maxElements} ${scan.unit}, the most this service reads in one upload: ` +
        'a real recording of any length needs far fewer. Send the file as an encoder wrote it.',
      { extra: { limit: maxElements } },
    );
}

/** The same for an upload the gateway streamed to a file: read as a stream, never whole into memory. */
export async function readAudioFileAt(
  path: string,
  size: number,
  mimeType: string,
  maxElements = DEFAULT_MAX_ELEMENTS,
): Promise<Record<string, unknown>> {
  const head = new Uint8Array(Math.min(size, HEAD_BYTES));
  const handle = await open(path, 'r');
  try {
    await handle.read(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
  const walk = (container: string) => {
    const fd = openSync(path, 'r');
    try {
      checkStructure(fileSource(fd, size), container, maxElements);
    } finally {
      closeSync(fd);
    }
  };
  return readAudio(head, size, mimeType, walk, async () => {
    const stream = createReadStream(path);
    try {
      return await parseStream(stream, { mimeType, size }, PARSE_OPTIONS);
    } finally {
      stream.destroy();
    }
  });
}

async function readAudio(
  head: Uint8Array,
  size: number,
  mimeType: string,
  checkStructureOf: (container: string) => void,
  parse: () => Promise<IAudioMetadata>,
): Promise<Record<string, unknown>> {
  if (size === 0) throw new DomainError('NOT_AUDIO', `The upload is empty. ${READABLE}`);
  const container = audioContainerOf(head);
  if (container === null)
    throw new DomainError(
      'NOT_AUDIO',
      `The upload is not audio: it starts with no signature of an audio format this service reads (sent as ${mimeType}). ${READABLE}`,
    );
  checkStructureOf(container);
  let metadata: IAudioMetadata;
  try {
    metadata = await parse();
  } catch (error) {
    throw new DomainError(
      'NOT_AUDIO',
      `The upload starts like ${container} but cannot be read as audio (${(error as Error).message}). ${READABLE}`,
    );
  }
  const { common, format } = metadata;
  const codecs = [format.codec, ...(format.trackInfo ?? []).map((t) => t.codecName)].filter(
    (c): c is string => typeof c === 'string',
  );
  if (!format.container && codecs.length === 0)
    throw new DomainError(
      'NOT_AUDIO',
      `The upload starts like ${container} but holds no audio stream this service can read. ${READABLE}`,
    );
  const encrypted = codecs.find((c) => ENCRYPTED_CODECS.has(c) || c.toUpperCase() === 'DRM');
  if (!encrypted) checkHasSamples(head, size, container, format);
  const tlen =
    metadata.native?.['ID3v2.3']?.find((t) => t.id === 'TLEN')?.value ??
    metadata.native?.['ID3v2.4']?.find((t) => t.id === 'TLEN')?.value;
  return {
    ...(common.title ? { title: common.title } : {}),
    ...(common.artist ? { artist: common.artist } : {}),
    ...(common.album ? { album: common.album } : {}),
    ...(common.isrc?.[0] ? { isrc: common.isrc[0] } : {}),
    ...(common.genre?.[0] ? { genre: common.genre[0] } : {}),
    ...(common.label?.[0] ? { label: common.label[0] } : {}),
    // The tag's own length (TLEN, milliseconds) wins over the length measured from the frames.
    ...(tlen !== undefined ? { TLEN: tlen } : format.duration !== undefined ? { duration: format.duration } : {}),
    // The evidence is named, so the rejection can say what the file showed.
    ...(encrypted ? { drm: `the file's audio track is encrypted (${encrypted} sample entry)` } : {}),
  };
}
