import { remark } from 'remark';
import type { DoctrineNote } from '../content/load.ts';
import { at, type Links } from './links.ts';

interface MdNode {
  type: string;
  depth?: number;
  value?: string;
  children?: MdNode[];
  position?: { start: { offset?: number }; end: { offset?: number } };
}

const plain = (n: MdNode): string => n.value ?? (n.children ?? []).map(plain).join('');

/** Splits a Markdown body into its H1 title and H2 sections, using remark's syntax tree. */
export function sectionsOf(markdown: string): { title: string | null; sections: { heading: string; text: string }[] } {
  const tree = remark().parse(markdown) as MdNode;
  let title: string | null = null;
  const sections: { heading: string; text: string; start: number; end: number }[] = [];
  for (const node of tree.children ?? []) {
    const end = node.position?.end.offset ?? 0;
    if (node.type === 'heading' && node.depth === 1) title ??= plain(node);
    else if (node.type === 'heading' && node.depth === 2)
      sections.push({ heading: plain(node), text: '', start: end, end });
    else if (sections.length > 0) sections.at(-1)!.end = end;
  }
  return {
    title,
    sections: sections.map((s) => ({ heading: s.heading, text: markdown.slice(s.start, s.end).trim() })),
  };
}

/** The raw Markdown document with its frontmatter, as served at `.md` URLs. */
export function doctrineMarkdown(note: DoctrineNote): string {
  const d = note.data;
  return `---\ntitle: ${JSON.stringify(d.title)}\nversion: ${d.version}\ndate: ${d.date}\nsummary: ${JSON.stringify(d.summary)}\n---\n\n${note.body.trimEnd()}\n`;
}

/** GET /api/doctrine/collapse-vs-drift: the note as JSON. */
export function buildDoctrineApi(note: DoctrineNote, links: Links) {
  const { title, sections } = sectionsOf(note.body);
  return {
    version: note.data.version,
    date: note.data.date,
    title: title ?? note.data.title,
    summary: note.data.summary,
    sections,
    markdown: note.body,
    source: at(links.site, `/doctrine/${note.slug}.md`),
  };
}
