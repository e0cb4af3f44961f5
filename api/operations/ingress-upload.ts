import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { UploadedBody } from '../http/body-policy.ts';
import { HttpProblem } from '../http/problem.ts';
import { parseJson, validate } from '../http/json-body.ts';
import type { RouteRequest } from '../http/route.ts';
import { IngressMetadataSchema } from '../schemas/ingress.ts';
import { normalise } from '../ingress/aliases.ts';
import type { AudioParser } from '../ingress/audio-parser.ts';
import { mergeEvidence } from '../ingress/evidence.ts';
import { runPipeline } from '../ingress/pipeline.ts';

/** Media types POST /api/ingress/audio takes. */
export const INGRESS_MEDIA_TYPES = [
  'application/json',
  'audio/*',
  'multipart/form-data (field "file", optional field "metadata" as JSON)',
];
export const isUploadType = (t: string) =>
  t.startsWith('audio/') || t === 'multipart/form-data' || t === 'application/octet-stream';

/**
 * Bounds of a multipart upload: the form has a "file" and a "metadata" part, so a few parts are
 * plenty; past them the upload is refused (413) without reading the rest, however many parts it has.
 */
export const MULTIPART_LIMITS = {
  parts: 4,
  files: 2,
  fields: 2,
  fieldSize: 64 * 1024,
  fieldNameSize: 100,
  headerPairs: 20,
} as const;

const tooMuch = (what: string, limit: number) =>
  new HttpProblem(
    'MULTIPART_TOO_LARGE',
    `The multipart body has more ${what} than the ${limit} this route reads. Send a "file" part and a "metadata" part.`,
    {
      extra: { limit },
    },
  );

interface MultipartBody {
  file?: { path: string; size: number; mimeType: string };
  /** The "metadata" part, sent as a field or as a file. */
  metadata?: string;
}

/**
 * Reads the parts of a multipart upload from the gateway's temporary file as they come: the audio
 * part is streamed to a file of its own, the metadata part is kept (at most fieldSize bytes).
 */
function readMultipart(upload: UploadedBody, scratch: string): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': upload.contentType }, limits: MULTIPART_LIMITS });
    } catch {
      return reject(
        new HttpProblem('MALFORMED_MULTIPART', 'The multipart body cannot be read: its Content-Type has no boundary.'),
      );
    }
    const source = createReadStream(upload.file);
    const result: MultipartBody = {};
    const writes: Promise<unknown>[] = [];
    const parts: NodeJS.ReadableStream[] = [];
    let failed = false;
    const fail = (problem: HttpProblem) => {
      if (failed) return;
      failed = true;
      source.unpipe(parser);
      source.destroy();
      for (const part of parts) (part as unknown as { destroy(): void }).destroy();
      reject(problem);
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated)
        return fail(tooMuch('bytes in the field "' + name.slice(0, 100) + '"', MULTIPART_LIMITS.fieldSize));
      if (name === 'metadata') result.metadata = value;
    });
    parser.on('file', (name, stream, info) => {
      parts.push(stream);
      if (name === 'file' && !result.file) {
        const file = { path: scratch, size: 0, mimeType: info.mimeType };
        result.file = file;
        stream.on('data', (chunk: Buffer) => void (file.size += chunk.length));
        writes.push(
          pipeline(stream, createWriteStream(scratch, { flags: 'wx', mode: 0o600 })).catch(() =>
            fail(new HttpProblem('MALFORMED_MULTIPART', 'The "file" part cannot be read.')),
          ),
        );
      } else if (name === 'metadata') {
        // A metadata part sent as a file (curl -F metadata=@meta.json) is read like a field.
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MULTIPART_LIMITS.fieldSize)
            return fail(tooMuch('bytes in the part "metadata"', MULTIPART_LIMITS.fieldSize));
          chunks.push(chunk);
        });
        stream.on('end', () => void (result.metadata = Buffer.concat(chunks).toString('utf8')));
      } else stream.resume();
    });
    parser.on('partsLimit', () => fail(tooMuch('parts', MULTIPART_LIMITS.parts)));
    parser.on('filesLimit', () => fail(tooMuch('files', MULTIPART_LIMITS.files)));
    parser.on('fieldsLimit', () => fail(tooMuch('fields', MULTIPART_LIMITS.fields)));
    parser.on('error', () => fail(new HttpProblem('MALFORMED_MULTIPART', 'The multipart body cannot be read.')));
    parser.on('close', () => {
      void Promise.all(writes).then(() => {
        if (!failed) resolve(result);
      });
    });
    source.on('error', () => fail(new HttpProblem('MALFORMED_MULTIPART', 'The multipart body cannot be read.')));
    source.pipe(parser);
  });
}

async function metadataFromMultipart(upload: UploadedBody, parser: AudioParser): Promise<Record<string, unknown>> {
  const scratch = `${upload.file}.file`;
  try {
    const { file, metadata: extra } = await readMultipart(upload, scratch);
    const fromJson =
      typeof extra === 'string' ? validate(IngressMetadataSchema, parseJson(new TextEncoder().encode(extra))) : {};
    if (file) {
      // Metadata sent beside the file fills in or overrides its tags, but never clears its DRM evidence.
      return mergeEvidence(
        await parser.read(
          { path: file.path, size: file.size, mimeType: file.mimeType || 'application/octet-stream' },
          upload.signal,
        ),
        fromJson,
      );
    }
    if (typeof extra === 'string') return fromJson;
    throw new HttpProblem(
      'VALIDATION_FAILED',
      'Send a file in the field "file", metadata as JSON in the field "metadata", or both.',
    );
  } finally {
    await rm(scratch, { force: true });
  }
}

/** POST /api/ingress/audio: metadata (JSON) or an audio file → SCRUB → MAP → SEAL. Writes nothing. */
export async function ingestAudio(request: RouteRequest, parser: AudioParser) {
  const upload = request.upload;
  let raw: Record<string, unknown>;
  if (upload?.mediaType === 'multipart/form-data') raw = await metadataFromMultipart(upload, parser);
  else if (upload)
    raw = await parser.read({ path: upload.file, size: upload.size, mimeType: upload.mediaType }, upload.signal);
  else raw = validate(IngressMetadataSchema, parseJson(request.body));
  return runPipeline(normalise(raw));
}
