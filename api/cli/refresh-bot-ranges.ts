import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { refreshRanges } from '../telemetry/ip-ranges.ts';

// npm run refresh-bot-ranges: fetches each operator's published ranges into content/bot-ip-ranges.yaml
// (then `npm run build`). Exit status 1 when a source failed; its old prefixes are kept.
const file = join(resolve(process.env.CONTENT_DIR ?? 'content'), 'bot-ip-ranges.yaml');
const fetchJson = async (url: string) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
};
const { text, report } = await refreshRanges(await readFile(file, 'utf8'), fetchJson, new Date().toISOString().slice(0, 10));
await writeFile(file, text);
for (const r of report) (r.error ? console.error : console.log)(`${r.family}: ${r.error ?? `${r.prefixes} prefixes`}`);
process.exit(report.some((r) => r.error) ? 1 : 0);
