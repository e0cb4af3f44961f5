/**
 * The bot wall keeps itself current: it reads /bot-wall.json every few seconds and redraws its
 * sections with the same renderers the server used, without reloading the page. Open family rows
 * stay open, the range switches without a request, and a pause button stops the polling.
 */
import {
  renderCharts,
  renderClasses,
  familyBody,
  familySummary,
  renderFunnel,
  renderMeters,
  when,
} from '../lib/bot-wall-render.ts';
import { renderRobotsTxt } from '../lib/bot-wall-robots.ts';
import { isRange, toWallView, type FamilyView, type RangeKey, type WallView } from '../lib/bot-wall-view.ts';
import { renderReferrals, toReferralView } from '../lib/bot-wall-referrals.ts';

const root = document.getElementById('wall');
// The page names its document (data-source), so the path is written once, in the operation table.
if (root?.dataset.source) start(root, root.dataset.source);

function start(root: HTMLElement, source: string): void {
  const $ = (id: string) => document.getElementById(id)!;
  const every = Math.max(2, Number(root.dataset.every) || 15) * 1000;
  let range: RangeKey = isRange(root.dataset.range) ? root.dataset.range : '24h';
  let doc: unknown = null;
  let paused = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function draw(v: WallView): void {
    $('meters').innerHTML = renderMeters(v);
    $('charts').innerHTML = renderCharts(v);
    $('classes').innerHTML = renderClasses(v);
    $('funnel').innerHTML = renderFunnel(v);
    $('robots').innerHTML = renderRobotsTxt(v.families);
    if (doc) $('referrals').innerHTML = renderReferrals(toReferralView(doc, v.range, new Date()), v.range);
    drawFamilies(v);
    root.dataset.range = v.range;
    for (const a of root.querySelectorAll<HTMLAnchorElement>('.range a')) {
      if (a.dataset.range === v.range) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    }
  }

  // Each family's latest view, and the summary each row shows. A closed row's body is drawn when it
  // opens, not at every update: hundreds of rows' bodies parsed and styled made each update a
  // third of a second of work in Chromium, for what nobody could see.
  const latest = new Map<string, FamilyView>();
  const summaries = new WeakMap<HTMLLIElement, string>();
  const drawBody = (li: HTMLLIElement, f: FamilyView) => {
    li.querySelector('.body')!.innerHTML = familyBody(f);
    delete li.dataset.stale;
  };
  // 'toggle' does not bubble: listened for as it comes down to the row.
  $('families').addEventListener(
    'toggle',
    (event) => {
      const details = event.target as HTMLDetailsElement;
      const li = details.parentElement as HTMLLIElement;
      const f = latest.get(li.dataset.family ?? '');
      if (details.open && li.dataset.stale !== undefined && f) drawBody(li, f);
    },
    true,
  );

  // Rows are kept by family so an open <details> (and focus inside it) survives an update.
  function drawFamilies(v: WallView): void {
    const list = $('families');
    latest.clear();
    const rows = new Map<string, HTMLLIElement>();
    for (const li of list.querySelectorAll<HTMLLIElement>(':scope > li[data-family]')) rows.set(li.dataset.family!, li);
    list.querySelector(':scope > li.empty')?.remove();
    v.families.forEach((f, i) => {
      let li = rows.get(f.family);
      if (!li) {
        li = document.createElement('li');
        li.dataset.family = f.family;
        li.append(document.createElement('details'));
        li.firstElementChild!.append(
          document.createElement('summary'),
          Object.assign(document.createElement('div'), { className: 'body' }),
        );
      }
      rows.delete(f.family);
      latest.set(f.family, f);
      li.dataset.requests = String(f.requests);
      li.dataset.total = String(f.total);
      const summary = familySummary(f, v);
      if (summaries.get(li) !== summary) {
        li.querySelector('summary')!.innerHTML = summary;
        summaries.set(li, summary);
      }
      if ((li.firstElementChild as HTMLDetailsElement).open) drawBody(li, f);
      else li.dataset.stale = '';
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] ?? null);
    });
    for (const gone of rows.values()) gone.remove();
  }

  async function refresh(): Promise<void> {
    try {
      const res = await fetch(source, { cache: 'no-store', headers: { Accept: 'application/json' } });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      doc = await res.json();
      const v = toWallView(doc, range, new Date());
      draw(v);
      $('updated').innerHTML = when(v.generatedAt);
      root.dataset.updates = String(Number(root.dataset.updates ?? 0) + 1);
    } catch (err) {
      $('updated').textContent =
        `an earlier read (the last update failed: ${err instanceof Error ? err.message : 'error'})`;
    }
  }

  function schedule(): void {
    clearTimeout(timer);
    if (!paused) timer = setTimeout(() => void refresh().then(schedule), document.hidden ? every * 4 : every);
  }

  const pause = $('pause') as HTMLButtonElement;
  pause.hidden = false;
  pause.addEventListener('click', () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume updates' : 'Pause updates';
    if (!paused) void refresh().then(schedule);
    else clearTimeout(timer);
  });

  for (const a of root.querySelectorAll<HTMLAnchorElement>('.range a')) {
    a.addEventListener('click', (event) => {
      const next = a.dataset.range;
      if (!isRange(next)) return;
      event.preventDefault();
      range = next;
      const url = new URL(location.href);
      url.searchParams.set('range', next);
      history.replaceState(null, '', url);
      if (doc) draw(toWallView(doc, range, new Date()));
      else void refresh();
    });
  }
  schedule();
}
