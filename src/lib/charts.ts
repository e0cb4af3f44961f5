/**
 * Charts as SVG strings: drawn on the server, redrawn by the bot wall's live script from the same
 * code. Every chart has a <title>, axes and values, and the same numbers as a table for screen
 * readers. Presentation attributes and classes only: the CSP allows no style attribute.
 */

/** Escapes text for HTML and SVG content and attribute values. */
export const esc = (s: unknown): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const WIDTH = 420;
const FONT = 13;

/** The smallest 1, 2 or 5 × 10^k at or above n: an axis that ends on a round number. */
export function niceCeil(n: number): number {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  return ([1, 2, 5, 10].find((m) => m * p >= n) ?? 10) * p;
}

const table = (caption: string, head: [string, string], rows: [string, number][]) =>
  `<div class="visually-hidden"><table><caption>${esc(caption)}</caption><thead><tr><th scope="col">${esc(head[0])}</th><th scope="col" class="num">${esc(head[1])}</th></tr></thead><tbody>${rows
    .map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td class="num">${v}</td></tr>`)
    .join('')}</tbody></table></div>`;

export interface Column {
  label: string;
  value: number;
  /** Full name of the column for its tooltip and the table (e.g. the ISO hour). */
  title?: string;
}

/** Columns over time, oldest left, with a y axis of round ticks and every n-th x label. */
export function columnChart(id: string, title: string, columns: Column[], unit: string): string {
  const top = 18;
  const left = 40;
  const bottom = 26;
  const height = 190;
  const plotH = height - top - bottom;
  const plotW = WIDTH - left - 22;
  const max = Math.max(0, ...columns.map((c) => c.value));
  const axisMax = niceCeil(max);
  const slot = plotW / Math.max(1, columns.length);
  const every = Math.max(1, Math.ceil(columns.length / 6));
  const y = (v: number) => top + plotH - (v / axisMax) * plotH;
  const ticks = [0, axisMax / 2, axisMax].filter((t) => Number.isInteger(t));
  const parts: string[] = [];
  for (const t of ticks) {
    parts.push(`<line class="gridline" x1="${left}" x2="${left + plotW}" y1="${y(t)}" y2="${y(t)}" stroke-width="1"/>`);
    parts.push(`<text x="${left - 6}" y="${y(t) + 4}" font-size="${FONT - 1}" text-anchor="end">${t}</text>`);
  }
  columns.forEach((c, i) => {
    const x = left + i * slot;
    const h = (c.value / axisMax) * plotH;
    if (c.value > 0)
      parts.push(
        `<rect class="bar" x="${(x + 1).toFixed(1)}" y="${(top + plotH - h).toFixed(1)}" width="${Math.max(1, slot - 2).toFixed(1)}" height="${h.toFixed(1)}"><title>${esc(c.title ?? c.label)}: ${c.value} ${esc(unit)}</title></rect>`,
      );
    // Values on the columns where they fit; the peak always carries its value.
    if (c.value > 0 && (slot >= 26 || c.value === max))
      parts.push(
        `<text class="value-label" x="${(x + slot / 2).toFixed(1)}" y="${(top + plotH - h - 4).toFixed(1)}" font-size="${FONT - 1}" text-anchor="middle">${c.value}</text>`,
      );
    if ((columns.length - 1 - i) % every === 0)
      parts.push(
        `<text x="${(x + slot / 2).toFixed(1)}" y="${height - 8}" font-size="${FONT - 1}" text-anchor="middle">${esc(c.label)}</text>`,
      );
  });
  parts.push(
    `<line class="axis" x1="${left}" x2="${left + plotW}" y1="${top + plotH}" y2="${top + plotH}" stroke-width="1"/>`,
  );
  parts.push(`<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${top + plotH}" stroke-width="1"/>`);
  const summary = `${title}: total ${columns.reduce((n, c) => n + c.value, 0)}, highest ${max}`;
  return `<figure class="chart" data-chart="${esc(id)}"><figcaption id="${esc(id)}-cap">${esc(title)}</figcaption>
<svg role="img" aria-labelledby="${esc(id)}-title" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" preserveAspectRatio="xMinYMin meet"><title id="${esc(id)}-title">${esc(summary)}</title>${parts.join('')}</svg>
${table(
  title,
  ['Period', unit],
  columns.map((c) => [c.title ?? c.label, c.value]),
)}</figure>`;
}

/** Horizontal bars, largest first, each label on its own line so long names fit a phone. */
export function barChart(id: string, title: string, bars: { label: string; value: number }[], unit: string): string {
  // Stable: bars that tie keep the order they came in (the family list's order).
  const sorted = [...bars].sort((a, b) => b.value - a.value);
  if (sorted.length === 0)
    return `<figure class="chart" data-chart="${esc(id)}"><figcaption>${esc(title)}</figcaption><p class="empty">Nothing in this range yet.</p></figure>`;
  const row = 38;
  const height = sorted.length * row + 4;
  const max = Math.max(1, ...sorted.map((b) => b.value));
  const span = WIDTH - 70;
  const parts = sorted.map((b, i) => {
    const w = Math.max(2, (b.value / max) * span);
    const y0 = i * row;
    const label = b.label.length > 52 ? `${b.label.slice(0, 51)}…` : b.label;
    return `<g><text x="0" y="${y0 + 14}" font-size="${FONT}">${esc(label)}</text><rect class="bar" x="0" y="${y0 + 19}" width="${w.toFixed(1)}" height="13"><title>${esc(b.label)}: ${b.value} ${esc(unit)}</title></rect><text class="value-label" x="${(w + 6).toFixed(1)}" y="${y0 + 30}" font-size="${FONT}">${b.value}</text></g>`;
  });
  return `<figure class="chart" data-chart="${esc(id)}"><figcaption>${esc(title)}</figcaption>
<svg role="img" aria-labelledby="${esc(id)}-title" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" preserveAspectRatio="xMinYMin meet"><title id="${esc(id)}-title">${esc(`${title}: ${sorted.map((b) => `${b.label} ${b.value}`).join(', ')}`)}</title>${parts.join('')}</svg>
${table(
  title,
  ['Name', unit],
  sorted.map((b) => [b.label, b.value]),
)}</figure>`;
}
