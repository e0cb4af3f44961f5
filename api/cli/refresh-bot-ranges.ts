import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { refreshRanges } from '../telemetry/verification/ip-ranges.ts';

// npm run refresh-bot-ranges: fetches every operator's published address list named in
// content/bot-ip-ranges.yaml (Google, Bing, Apple, OpenAI, Perplexity, Common Crawl, DuckDuckGo,
// Ahrefs, Telegram, Pingdom, UptimeRobot) and rewrites its prefixes (then `npm run build`).
// Exit status 1 when a source failed: that list keeps its old prefixes, and the file is only
// rewritten when at least one list was refreshed.
const file = join(resolve(process.env.CONTENT_DIR ?? 'content'), 'bot-ip-ranges.yaml');
const fetchText = async (url: string) => {
  let res: Response;
  try {
    res = await fetch(url, {
      signal: AbortSignal.timeout(15_000),
      headers: { 'User-Agent': 'agent-node-refresh-bot-ranges' },
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`could not fetch (${cause?.code ?? cause?.message ?? (error as Error).message})`);
  }
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.text();
};
const before = await readFile(file, 'utf8');
const { text, report } = await refreshRanges(before, fetchText, new Date().toISOString().slice(0, 10));
if (report.some((r) => r.prefixes !== undefined)) await writeFile(file, text);
for (const r of report) (r.error ? console.error : console.log)(`${r.list}: ${r.error ?? `${r.prefixes} prefixes`}`);
const failed = report.filter((r) => r.error).length;
console.error(
  failed
    ? `${failed} of ${report.length} lists could not be refreshed; they keep their prefixes from ${file}.`
    : `all ${report.length} lists refreshed into ${file}.`,
);
process.exit(failed ? 1 : 0);
