/**
 * The bot wall's sections as HTML strings, from a WallView. The page renders them on the server;
 * its live script renders the same functions from a fresh /bot-wall.json, so both always agree.
 * Every value goes through `esc`: family names and paths come from the network.
 */
import { barChart, columnChart, esc } from './charts.ts';
import { complianceText, robotsTxtDetail } from './bot-wall-robots.ts';
import { CLASS_GROUPS, METHOD_TEXT, RANGES, type FamilyView, type WallView } from './bot-wall-view.ts';

/** A UTC timestamp short enough for one line: `2026-11-22 18:05 UTC`. */
export function when(iso: string | null): string {
  if (!iso) return '<span class="muted">not yet</span>';
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return esc(iso);
  const s = t.toISOString();
  return `<time class="nowrap" datetime="${esc(s)}">${s.slice(0, 10)} ${s.slice(11, 16)} UTC</time>`;
}

const rangeText = (v: WallView) => RANGES[v.range].label.toLowerCase();
const pct = (part: number, whole: number) => (whole > 0 ? `${Math.round((100 * part) / whole)}%` : '–');

/** Two groups of meters: what the range's buckets hold, and what the window holds. */
export function renderMeters(v: WallView): string {
  const t = v.totals;
  const checked = t.verified + t.failed;
  const group = (title: string, items: [string, string][]) =>
    `<h3 class="meter-h">${esc(title)}</h3><ul class="meters">${items.map(([label, value]) => `<li><span class="label">${esc(label)}</span><span class="value">${esc(value)}</span></li>`).join('')}</ul>`;
  return (
    group(`In the range: ${rangeText(v)}`, [
      ['Bot requests', String(t.requests)],
      ['Families seen', String(t.families)],
    ]) +
    group('Since the window started', [
      ['Verified share of checked claims', checked > 0 ? `${pct(t.verified, checked)} of ${checked}` : 'none checked'],
      ['Requests that cannot be verified', String(t.unverifiable)],
      ['robots.txt fetches', String(t.robotsTxtFetches)],
      ['Hits on disallowed paths', String(t.disallowedHits)],
      // Neither bots nor counted as people: a product token no list names, with no bot's evidence.
      ['Requests from unknown clients (not bots)', String(t.unknownClients)],
    ])
  );
}

export function renderCharts(v: WallView): string {
  const per = v.bucket === 'hour' ? 'hour' : 'day';
  const timeTitle = `Requests per ${per}, ${rangeText(v)} (UTC)${v.folded ? ': the document has hourly buckets only, so days before yesterday are empty' : ''}`;
  const time = v.bucketed
    ? columnChart(
        'time',
        timeTitle,
        v.series.map((s) => ({
          label: s.label,
          value: s.requests,
          title: v.bucket === 'hour' ? `${s.start.slice(0, 13).replace('T', ' ')}:00 UTC` : s.start.slice(0, 10),
        })),
        'requests',
      )
    : `<figure class="chart" data-chart="time"><figcaption>${esc(timeTitle)}</figcaption><p class="empty">The document carries no time buckets: counts are since the window started.</p></figure>`;
  const families = barChart(
    'families',
    `Requests by family, ${rangeText(v)}`,
    v.families
      .filter((f) => f.requests > 0)
      .slice(0, 12)
      .map((f) => ({ label: f.family, value: f.requests })),
    'requests',
  );
  const classes = barChart(
    'classes',
    `Requests by class, ${rangeText(v)}`,
    v.classes.filter((c) => c.requests > 0).map((c) => ({ label: c.label, value: c.requests })),
    'requests',
  );
  const statuses = barChart(
    'statuses',
    'Status classes, since the window started',
    v.statuses.map((s) => ({ label: s.status, value: s.requests })),
    'requests',
  );
  return `<div class="grid-2">${time}${families}</div><div class="grid-2">${classes}${statuses}</div>`;
}

/** Families a class's card names, most requests first: the Families list below names every one. */
export const CLASS_CARD_FAMILIES = 10;

export function renderClasses(v: WallView): string {
  return v.classes
    .filter((c) => c.class !== 'Cosplay' || c.families.length > 0)
    .map((c) => {
      const shown = c.families.slice(0, CLASS_CARD_FAMILIES);
      const more = c.families.length - shown.length;
      const list =
        c.families.length === 0
          ? '<p class="empty">None in this range.</p>'
          : `<ul>${shown.map((f) => `<li>${esc(f.family)}: ${f.requests}</li>`).join('')}</ul>${
              more > 0 ? `<p class="muted">and ${more} more ${more === 1 ? 'family' : 'families'}</p>` : ''
            }`;
      return `<li data-class="${esc(c.class)}" data-families="${c.families.length}"><h3>${esc(c.label)}: ${c.requests}</h3><p class="muted">${esc(c.about)}</p>${list}</li>`;
    })
    .join('');
}

function verificationLine(f: FamilyView): string {
  const v = f.verification;
  if (v.method === 'none') return `<span class="muted">cannot be verified</span>`;
  const checked = v.verified + v.failed;
  const how = v.method === 'unknown' ? '' : ` by ${esc(METHOD_TEXT[v.method])}`;
  return checked === 0
    ? `not checked yet${how}`
    : `<span class="${v.verified >= v.failed ? 'ok' : 'warn'}">${pct(v.verified, checked)} verified</span>${how} (${v.verified} of ${checked}${v.failed > 0 ? `, <span class="warn">${v.failed} failed</span>` : ''})`;
}

/** The always-visible line of a family: name, class, requests in the range, verification. */
export function familySummary(f: FamilyView, v: WallView): string {
  return `<span class="name">${esc(f.family)}</span><span class="count">${f.requests}<span class="visually-hidden"> requests, ${esc(rangeText(v))}</span></span><span class="meta">${esc(CLASS_GROUPS.find((g) => g.class === f.class)?.label ?? f.class)} · ${f.total} since the window started · ${verificationLine(f)}${f.robotsTxt.compliance === 'not judged' ? '' : ` · robots.txt ${complianceText(f.robotsTxt)}`}</span>`;
}

/** What a family row opens to. */
export function familyBody(f: FamilyView): string {
  const v = f.verification;
  const rows: [string, string][] = [
    ['Operator', f.operator ? esc(f.operator) : '<span class="muted">not recorded</span>'],
    ['How a claim is checked', esc(METHOD_TEXT[v.method])],
    ['Verified', String(v.verified)],
    ['Failed verification', String(v.failed)],
    ['Cannot be verified', String(v.unverifiable)],
    ['robots.txt fetches', String(f.robotsTxtFetches)],
    ['Hits on disallowed paths', String(f.disallowedHits)],
    ['First seen', when(f.firstSeen)],
    ['Last seen', when(f.lastSeen)],
  ];
  if (f.funnel)
    rows.push(['Convert reads, oaths, messages', `${f.funnel.convertReads}, ${f.funnel.oaths}, ${f.funnel.messages}`]);
  const paths = f.paths.length
    ? `<table><caption>Top paths, since the window started</caption><thead><tr><th scope="col">Path</th><th scope="col" class="num">Requests</th></tr></thead><tbody>${f.paths
        .map((p) => `<tr><td><code>${esc(p.path)}</code></td><td class="num">${p.requests}</td></tr>`)
        .join('')}</tbody></table>`
    : '<p class="empty">No paths recorded.</p>';
  const statuses = f.statuses.length
    ? `<p>Statuses: ${f.statuses.map((s) => `${esc(s.status)} × ${s.requests}`).join(', ')}</p>`
    : '';
  return `<dl>${rows.map(([k, val]) => `<dt>${esc(k)}</dt><dd>${val}</dd>`).join('')}</dl>${robotsTxtDetail(f.robotsTxt)}${statuses}${paths}`;
}

/** One family row: machines read `data-family` and `data-requests` (requests in the range). */
export function familyItem(f: FamilyView, v: WallView): string {
  return `<li data-family="${esc(f.family)}" data-requests="${f.requests}" data-total="${f.total}"><details><summary>${familySummary(f, v)}</summary><div class="body">${familyBody(f)}</div></details></li>`;
}

export const renderFamilies = (v: WallView): string =>
  v.families.length
    ? v.families.map((f) => familyItem(f, v)).join('')
    : '<li class="empty">No bot has been seen since the window started.</li>';

/** The funnel from presence to catch, per family. */
export function renderFunnel(v: WallView): string {
  const rows = v.families.filter((f) => f.funnel);
  if (rows.length === 0) return '<p class="empty">No family yet.</p>';
  return `<div class="scroll" tabindex="0" role="region" aria-label="Funnel by family"><table><thead><tr><th scope="col">Family</th><th scope="col" class="num">Presence</th><th scope="col" class="num">Convert reads</th><th scope="col" class="num">Oaths</th><th scope="col" class="num">Messages</th></tr></thead><tbody>${rows
    .map(
      (f) =>
        `<tr><th scope="row">${esc(f.family)}</th><td class="num">${f.funnel!.presence}</td><td class="num">${f.funnel!.convertReads}</td><td class="num">${f.funnel!.oaths}</td><td class="num">${f.funnel!.messages}</td></tr>`,
    )
    .join('')}</tbody></table></div>`;
}
