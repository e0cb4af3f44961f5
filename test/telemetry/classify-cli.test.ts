import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('npm run classify', () => {
  it('answers one JSON line per User-Agent line: {userAgent, bot, family, class, verify}', () => {
    const input = [
      'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
      'TelegramBot (like TwitterBot)',
      'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      'Florienzh/1.0',
      '',
    ].join('\n');
    const run = spawnSync('node_modules/.bin/node', ['api/cli/classify.ts'], { input, encoding: 'utf8' });
    expect(run.status).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      {
        userAgent: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
        bot: true,
        family: 'Googlebot',
        class: 'Crawler',
        verify: 'ip-ranges',
      },
      {
        userAgent: 'TelegramBot (like TwitterBot)',
        bot: true,
        family: 'TelegramBot',
        class: 'Bot',
        verify: 'ip-ranges',
      },
      {
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
        bot: false,
        family: null,
        class: null,
        verify: 'none',
      },
      // An unknown product token alone: neither a bot nor counted as a person.
      { userAgent: 'Florienzh/1.0', bot: false, family: null, class: null, verify: 'none', unknown: true },
    ]);
  });
});
