import { normalise } from './aliases.ts';

/**
 * Merges what an uploaded file shows with the metadata sent beside it. The caller's metadata
 * fills in or overrides tags (a title, a duration), but evidence from the file wins for DRM:
 * metadata may add a DRM flag, never clear one the file carries ("DRM-locked blobs are rejected").
 */
export function mergeEvidence(
  fileTags: Record<string, unknown>,
  callerMetadata: Record<string, unknown>,
): Record<string, unknown> {
  const merged = { ...fileTags, ...callerMetadata };
  const file = normalise(fileTags);
  if (!file.drm) return merged;
  // Every DRM flag the file carried is put back under its own name, whatever the caller sent.
  for (const [name, value] of Object.entries(fileTags)) if (normalise({ [name]: value }).drm) merged[name] = value;
  return merged;
}
