import { HttpProblem } from '../http/problem.ts';
import { parseJson, validate } from '../http/json-body.ts';
import { IngressMetadataSchema } from '../schemas/ingress.ts';
import { normalise } from './aliases.ts';
import { readAudioFile } from './audio-file.ts';
import { mergeEvidence } from './evidence.ts';
import { runPipeline } from './pipeline.ts';

/** Media types POST /api/ingress/audio takes. */
export const INGRESS_MEDIA_TYPES = ['application/json', 'audio/*', 'multipart/form-data (field "file", optional field "metadata" as JSON)'];
export const isUploadType = (t: string) => t.startsWith('audio/') || t === 'multipart/form-data' || t === 'application/octet-stream';

async function metadataFromMultipart(request: Request): Promise<Record<string, unknown>> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    throw new HttpProblem(400, 'MALFORMED_MULTIPART', 'The multipart body cannot be read.');
  }
  const file = form.get('file');
  const extra = form.get('metadata');
  const fromJson = typeof extra === 'string' ? validate(IngressMetadataSchema, parseJson(new TextEncoder().encode(extra))) : {};
  if (file !== null && typeof file !== 'string') {
    // Metadata sent beside the file fills in or overrides its tags, but never clears its DRM evidence.
    return mergeEvidence(await readAudioFile(new Uint8Array(await file.arrayBuffer()), file.type || 'application/octet-stream'), fromJson);
  }
  if (typeof extra === 'string') return fromJson;
  throw new HttpProblem(422, 'VALIDATION_FAILED', 'Send a file in the field "file", metadata as JSON in the field "metadata", or both.');
}

/** POST /api/ingress/audio: metadata (JSON) or an audio file → SCRUB → MAP → SEAL. Writes nothing. */
export async function ingestAudio(request: Request) {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  let raw: Record<string, unknown>;
  if (type === 'multipart/form-data') raw = await metadataFromMultipart(request);
  else if (type.startsWith('audio/') || type === 'application/octet-stream') raw = await readAudioFile(new Uint8Array(await request.arrayBuffer()), type);
  else raw = validate(IngressMetadataSchema, parseJson(new Uint8Array(await request.arrayBuffer())));
  return runPipeline(normalise(raw));
}
