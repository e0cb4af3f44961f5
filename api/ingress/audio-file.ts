import { createReadStream } from 'node:fs';
import { parseBuffer, parseStream, type IAudioMetadata } from 'music-metadata';
import { HttpProblem } from '../http/problem.ts';

// Encrypted MP4 sample entries (ISO/IEC 23001-7) and Apple's FairPlay protected audio.
const ENCRYPTED_CODECS = new Set(['<drms>', '<enca>', '<encv>']);

/**
 * Reads an uploaded audio file's tags and duration with music-metadata, as plain metadata fields
 * for the ingress pipeline. A body that is not audio is a 415.
 */
export async function readAudioFile(bytes: Uint8Array, mimeType: string): Promise<Record<string, unknown>> {
  return fieldsOf(await parsed(() => parseBuffer(bytes, { mimeType, size: bytes.length }, PARSE_OPTIONS)));
}

/** The same for an upload the gateway streamed to a file: read as a stream, never whole into memory. */
export async function readAudioFileAt(path: string, size: number, mimeType: string): Promise<Record<string, unknown>> {
  return fieldsOf(
    await parsed(async () => {
      const stream = createReadStream(path);
      try {
        return await parseStream(stream, { mimeType, size }, PARSE_OPTIONS);
      } finally {
        stream.destroy();
      }
    }),
  );
}

const PARSE_OPTIONS = { duration: true, skipCovers: true };

async function parsed(parse: () => Promise<IAudioMetadata>): Promise<IAudioMetadata> {
  try {
    return await parse();
  } catch (error) {
    throw new HttpProblem(415, 'NOT_AUDIO', `The upload could not be read as audio (${(error as Error).message}). Send WAV, MP3, MP4/M4A, FLAC or Ogg, or JSON metadata.`);
  }
}

function fieldsOf(metadata: IAudioMetadata): Record<string, unknown> {
  const { common, format } = metadata;
  const codecs = [format.codec, ...(format.trackInfo ?? []).map((t) => t.codecName)].filter((c): c is string => typeof c === 'string');
  if (!format.container && codecs.length === 0) throw new HttpProblem(415, 'NOT_AUDIO', 'The upload is not an audio file this service can read.');
  const tlen = metadata.native?.['ID3v2.3']?.find((t) => t.id === 'TLEN')?.value ?? metadata.native?.['ID3v2.4']?.find((t) => t.id === 'TLEN')?.value;
  return {
    ...(common.title ? { title: common.title } : {}),
    ...(common.artist ? { artist: common.artist } : {}),
    ...(common.album ? { album: common.album } : {}),
    ...(common.isrc?.[0] ? { isrc: common.isrc[0] } : {}),
    ...(common.genre?.[0] ? { genre: common.genre[0] } : {}),
    ...(common.label?.[0] ? { label: common.label[0] } : {}),
    // The tag's own length (TLEN, milliseconds) wins over the length measured from the frames.
    ...(tlen !== undefined ? { TLEN: tlen } : format.duration !== undefined ? { duration: format.duration } : {}),
    ...(codecs.some((c) => ENCRYPTED_CODECS.has(c) || c.toUpperCase() === 'DRM') ? { drm: true } : {}),
  };
}
