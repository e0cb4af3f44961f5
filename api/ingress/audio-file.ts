import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { parseBuffer, parseStream, type IAudioMetadata } from 'music-metadata';
import { DomainError } from '../problems/domain.ts';
import { audioContainerOf, wavDataChunk } from './sniff.ts';

// Encrypted MP4 sample entries (ISO/IEC 23001-7) and Apple's FairPlay protected audio.
const ENCRYPTED_CODECS = new Set(['<drms>', '<enca>', '<encv>']);
const READABLE = 'Send WAV, AIFF, MP3, MP4/M4A, FLAC, Ogg, Matroska/WebM or ASF, or JSON metadata.';
const PARSE_OPTIONS = { duration: true, skipCovers: true };
// Enough of a streamed upload to recognise its format and find a WAV data chunk.
const HEAD_BYTES = 64 * 1024;

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
export function readAudioFile(bytes: Uint8Array, mimeType: string): Promise<Record<string, unknown>> {
  return readAudio(bytes, bytes.length, mimeType, () =>
    parseBuffer(bytes, { mimeType, size: bytes.length }, PARSE_OPTIONS),
  );
}

/** The same for an upload the gateway streamed to a file: read as a stream, never whole into memory. */
export async function readAudioFileAt(path: string, size: number, mimeType: string): Promise<Record<string, unknown>> {
  const head = new Uint8Array(Math.min(size, HEAD_BYTES));
  const handle = await open(path, 'r');
  try {
    await handle.read(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
  return readAudio(head, size, mimeType, async () => {
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
  parse: () => Promise<IAudioMetadata>,
): Promise<Record<string, unknown>> {
  if (size === 0) throw new DomainError('NOT_AUDIO', `The upload is empty. ${READABLE}`);
  const container = audioContainerOf(head);
  if (container === null)
    throw new DomainError(
      'NOT_AUDIO',
      `The upload is not audio: it starts with no signature of an audio format this service reads (sent as ${mimeType}). ${READABLE}`,
    );
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
