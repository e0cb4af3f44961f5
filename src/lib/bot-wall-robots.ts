/**
 * The bot wall's robots.txt view: per family, whether it kept to the rules robots.txt gives *that*
 * crawler (RFC 9309), and each Disallow line it broke with the paths and counts. Read from
 * `botTraffic.families[].robotsTxt` of /bot-wall.json; a document without it degrades to the older
 * counts (fetches, disallowed hits), never to an error. Pure and DOM-free, like the rest of the view.
 */
import type { RobotsRuleCount } from '../../api/telemetry/ledger/ledger.ts';
import { esc } from './charts.ts';

export type Compliance = 'not judged' | 'compliant' | 'violating';

/** A broken rule as the ledger counts it, its paths as a list (the document's form). */
export type RobotsRuleView = Omit<RobotsRuleCount, 'paths'> & { paths: { path: string; requests: number }[] };

export interface RobotsTxtView {
  compliance: Compliance;
  judged: number;
  violations: number;
  violationsAfterFetch: number;
  fetchedRobotsTxt: boolean;
  rules: RobotsRuleView[];
}

type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Loose) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');
const COMPLIANCE = new Set<Compliance>(['not judged', 'compliant', 'violating']);

/** A family's robots.txt view from the document; `fetches` is the older count, when the part is absent. */
export function readRobotsTxt(v: unknown, fetches: number): RobotsTxtView {
  const o = obj(v);
  const compliance = COMPLIANCE.has(o.compliance as Compliance) ? (o.compliance as Compliance) : 'not judged';
  return {
    compliance,
    judged: num(o.judged),
    violations: num(o.violations),
    violationsAfterFetch: num(o.violationsAfterFetch),
    fetchedRobotsTxt: typeof o.fetchedRobotsTxt === 'boolean' ? o.fetchedRobotsTxt : fetches > 0,
    rules: arr(o.rules).map((raw) => {
      const r = obj(raw);
      return {
        host: text(r.host),
        version: text(r.version),
        line: num(r.line),
        rule: text(r.rule),
        agent: text(r.agent),
        requests: num(r.requests),
        afterFetch: num(r.afterFetch),
        paths: arr(r.paths).map((p) => ({ path: text(obj(p).path), requests: num(obj(p).requests) })),
      };
    }),
  };
}

/** The compliance as one short phrase, marked for colour (never by colour alone: the words say it). */
export function complianceText(r: RobotsTxtView): string {
  if (r.compliance === 'not judged') return '<span class="muted">not judged</span>';
  if (r.compliance === 'compliant') return '<span class="ok">compliant</span>';
  return `<span class="warn">${r.violations} disallowed ${r.violations === 1 ? 'request' : 'requests'}</span>`;
}

const where = (r: RobotsRuleView) => (r.host === 'site' || r.host === '' ? '' : ` on ${esc(r.host)}`);

/** What a family row opens to, under "robots.txt": each broken rule as written, its group and paths. */
export function robotsTxtDetail(r: RobotsTxtView): string {
  const head = `<p>robots.txt: ${complianceText(r)}${r.judged > 0 ? ` of ${r.judged} judged` : ''}; ${r.fetchedRobotsTxt ? 'fetched robots.txt' : 'never fetched robots.txt'}${r.violations > 0 ? `; ${r.violationsAfterFetch} after fetching it` : ''}.</p>`;
  if (r.rules.length === 0) return `<section class="robots-txt" aria-label="robots.txt">${head}</section>`;
  const rows = r.rules
    .map(
      (rule) =>
        `<tr><td>${rule.line > 0 ? `<code>${esc(rule.rule)}</code> <span class="muted nowrap">line ${rule.line}${where(rule)}, group <code>${esc(rule.agent)}</code>, version <code>${esc(rule.version)}</code></span>` : esc(rule.rule)}</td><td>${rule.paths.map((p) => `<code>${esc(p.path)}</code> × ${p.requests}`).join(', ')}</td><td class="num">${rule.requests}</td></tr>`,
    )
    .join('');
  return `<section class="robots-txt" aria-label="robots.txt">${head}<div class="scroll" tabindex="0" role="region" aria-label="Disallow rules broken"><table><caption>Disallow rules broken, since the window started</caption><thead><tr><th scope="col">Rule</th><th scope="col">Paths</th><th scope="col" class="num">Requests</th></tr></thead><tbody>${rows}</tbody></table></div></section>`;
}

/** The page's robots.txt section: one row per judged family, with its compliance column. */
export function renderRobotsTxt(families: { family: string; robotsTxt: RobotsTxtView }[]): string {
  const judged = families.filter((f) => f.robotsTxt.judged > 0 || f.robotsTxt.fetchedRobotsTxt);
  if (judged.length === 0) return '<p class="empty">No crawler judged yet.</p>';
  judged.sort((a, b) => b.robotsTxt.violations - a.robotsTxt.violations || a.family.localeCompare(b.family));
  return `<div class="scroll" tabindex="0" role="region" aria-label="robots.txt compliance by family"><table><thead><tr><th scope="col">Family</th><th scope="col">Compliance</th><th scope="col" class="num">Judged</th><th scope="col" class="num">Disallowed</th><th scope="col" class="num">After fetching robots.txt</th><th scope="col">Fetched robots.txt</th><th scope="col">Rule broken most</th></tr></thead><tbody>${judged
    .map(({ family, robotsTxt: r }) => {
      const most = r.rules[0];
      return `<tr data-robots-family="${esc(family)}" data-compliance="${esc(r.compliance)}"><th scope="row">${esc(family)}</th><td>${complianceText(r)}</td><td class="num">${r.judged}</td><td class="num">${r.violations}</td><td class="num">${r.violationsAfterFetch}</td><td>${r.fetchedRobotsTxt ? 'yes' : 'no'}</td><td>${most ? `<code>${esc(most.rule)}</code>${most.line > 0 ? ` <span class="muted nowrap">line ${most.line}</span>` : ''}` : ''}</td></tr>`;
    })
    .join('')}</tbody></table></div>`;
}
