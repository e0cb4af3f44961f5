/** Absolute URLs of this service ({base_url}) and of the canonical site ({canon_url}). */
export interface Links {
  site: string;
  canon: string;
}

/** Makes an absolute URL of a site path. */
export const at = (base: string, path: string): string => `${base}${path}`;
