import { defineCollection } from 'astro:content';
import { glob } from 'astro/loaders';
import { CONTENT_FILES, type ContentKey } from '../api/content/load.ts';
import { DoctrineFrontmatterSchema } from '../api/schemas/content.ts';

// CONTENT_DIR lets a test build a copy of content/ (for example a broken one).
const base = process.env.CONTENT_DIR ?? './content';

const data = Object.fromEntries(
  (Object.keys(CONTENT_FILES) as ContentKey[]).map((key) => [
    key,
    defineCollection({ loader: glob({ pattern: CONTENT_FILES[key].file, base }), schema: CONTENT_FILES[key].schema }),
  ]),
) as { [K in ContentKey]: ReturnType<typeof defineCollection> };

export const collections = {
  ...data,
  doctrine: defineCollection({
    loader: glob({
      pattern: 'doctrine/*.md',
      base,
      generateId: ({ entry }) => entry.replace(/^doctrine\/|\.md$/g, ''),
    }),
    schema: DoctrineFrontmatterSchema,
  }),
};
