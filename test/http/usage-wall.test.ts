import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSV_COLUMNS } from '../../api/documents/bot-wall-csv.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const GPT = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)';
const CLAUDE_USER =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

const as = async (ua: string, path: string, accept?: string) => {
  const res = await fetch(server.url + path, { headers: { 'User-Agent': ua, ...(accept ? { Accept: accept } : {}) } });
  return { res, text: await res.text() };
};
const family = async (name: string) =>
  (
    (await (await fetch(`${server.url}/bot-wall.json`, { headers: { 'User-Agent': FIREFOX } })).json()).botTraffic
      .families as any[]
  ).find((f) => f.family === name);

describe('the wall judges AI usage preferences and counts formats', () => {
  it('counts a training crawler on a train-ai=n path beside its robots.txt judgement, and the formats it took', async () => {
    await as(GPT, '/whats-next'); // HTML, train-ai=y
    await as(GPT, '/bot-wall.json'); // JSON, train-ai=n
    await as(GPT, '/bot-wall', 'text/markdown'); // Markdown of a live page, train-ai=n
    const md = await as(GPT, '/whats-next.md'); // Markdown, train-ai=y
    const tokens = Number(md.res.headers.get('x-markdown-tokens'));
    const live = await as(GPT, '/bot-wall', 'text/markdown');
    const f = await family('GPTBot');
    expect(f.usage).toEqual({
      preferenceBroken: 3,
      formats: { markdown: 3, html: 1, json: 1 },
      markdownTokens: tokens + 2 * Number(live.res.headers.get('x-markdown-tokens')),
    });
    // Beside the robots.txt judgement: robots.txt allows every one of them.
    expect(f.robotsTxt).toMatchObject({ violations: 0 });
  });

  it('counts a crawler taking Markdown, and no preference broken by a purpose the vocabulary does not name', async () => {
    const page = await as(CLAUDE_USER, '/docs/api', 'text/markdown');
    expect(page.res.headers.get('content-type')).toMatch(/^text\/markdown/);
    await as(CLAUDE_USER, '/bot-wall.json');
    const f = await family('Claude-User');
    expect(f.usage).toEqual({
      preferenceBroken: 0,
      formats: { markdown: 1, html: 0, json: 1 },
      markdownTokens: Number(page.res.headers.get('x-markdown-tokens')),
    });
  });

  it('has the same counts in the CSV', async () => {
    const csv = await (await fetch(`${server.url}/bot-wall.csv?range=all`)).text();
    const [head, ...rows] = csv.trim().split(/\r?\n/);
    expect(head!.split(',')).toEqual([...CSV_COLUMNS]);
    const at = (name: string) => CSV_COLUMNS.indexOf(name as (typeof CSV_COLUMNS)[number]);
    const gpt = rows.map((r) => r.split(',')).find((r) => r[0] === 'GPTBot')!;
    const f = await family('GPTBot');
    expect(Number(gpt[at('usage_preference_broken')])).toBe(f.usage.preferenceBroken);
    expect(Number(gpt[at('markdown_answers')])).toBe(f.usage.formats.markdown);
    expect(Number(gpt[at('html_answers')])).toBe(f.usage.formats.html);
    expect(Number(gpt[at('json_answers')])).toBe(f.usage.formats.json);
    expect(Number(gpt[at('markdown_tokens')])).toBe(f.usage.markdownTokens);
  });
});
