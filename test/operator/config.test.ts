import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, loadConfig, loadPostgresConfig, loadServerConfig, MAX_TIMER_MS } from '../../api/config.ts';

const NAMES = Object.keys(ConfigSchema.in.shape);
/** The time settings: every *_MS variable. */
const TIME_SETTINGS = NAMES.filter((name) => name.endsWith('_MS'));

describe('an empty variable is an unset one', () => {
  it('every variable, empty or blank, takes its documented default', () => {
    const defaults = loadConfig({});
    for (const name of NAMES)
      for (const value of ['', '  '])
        expect(loadConfig({ [name]: value }), `${name}=${JSON.stringify(value)}`).toEqual(defaults);
  });

  it('PORT= listens on 4321 and WRITE_RATE_LIMIT= keeps 60 writes a minute (not 0: a random port, no limit)', () => {
    const config = loadConfig({ PORT: '', WRITE_RATE_LIMIT: '' });
    expect(config.PORT).toBe(4321);
    expect(config.WRITE_RATE_LIMIT).toBe(60);
    expect(config.SITE_URL).toBe('http://localhost:4321');
  });

  it('DATA_DIR= without DATABASE_URL is ./data, never the working directory', () => {
    expect(loadServerConfig({ DATA_DIR: '' }).DATA_DIR).toBe(resolve('data'));
    expect(loadServerConfig({ DATA_DIR: '' }).DATA_DIR).not.toBe(process.cwd());
    // Beside DATABASE_URL, empty is still "not set" (docs/deploy.md: DATA_DIR= on PostgreSQL).
    expect(loadServerConfig({ DATA_DIR: '', DATABASE_URL: 'postgres://u@h/db' }).DATABASE_URL).toBe(
      'postgres://u@h/db',
    );
  });

  it('npm run migrate reads its variables alike', () => {
    expect(loadPostgresConfig({ DATABASE_URL: 'postgres://u@h/db', PG_CONNECT_TIMEOUT_MS: '' })).toMatchObject({
      PG_CONNECT_TIMEOUT_MS: 1500,
      PG_QUERY_TIMEOUT_MS: 2000,
    });
  });
});

describe('time settings have a maximum', () => {
  it('each *_MS setting past what a timer (and PostgreSQL) holds is refused, naming the variable', () => {
    expect(TIME_SETTINGS.length).toBeGreaterThanOrEqual(9);
    for (const name of TIME_SETTINGS) {
      // Node would run a longer timer after 1 ms.
      expect(() => loadConfig({ [name]: String(MAX_TIMER_MS + 1) }), name).toThrow(
        new RegExp(`invalid configuration:\\n {2}${name}: must be at most \\d+ \\(ms\\)`),
      );
      expect(() => loadConfig({ [name]: '99999999999' }), name).toThrow(name);
    }
  });

  it('2^31-1 ms is the most a timer setting may be', () => {
    for (const name of ['PG_CONNECT_TIMEOUT_MS', 'PG_IDLE_TIMEOUT_MS', 'BODY_IDLE_TIMEOUT_MS', 'SEND_TIMEOUT_MS'])
      expect(loadConfig({ [name]: String(MAX_TIMER_MS) })[name as 'SEND_TIMEOUT_MS']).toBe(MAX_TIMER_MS);
    expect(loadConfig({ TELEMETRY_FLUSH_MS: String(MAX_TIMER_MS) }).TELEMETRY_FLUSH_MS).toBe(MAX_TIMER_MS);
    expect(loadConfig({ AUDIO_PARSE_CPU_MS: String(MAX_TIMER_MS) }).AUDIO_PARSE_CPU_MS).toBe(MAX_TIMER_MS);
  });

  it('PG_QUERY_TIMEOUT_MS is at most half of it: twice it is idle_in_transaction_session_timeout (an int4)', () => {
    const half = Math.floor(MAX_TIMER_MS / 2);
    expect(loadConfig({ PG_QUERY_TIMEOUT_MS: String(half) }).PG_QUERY_TIMEOUT_MS).toBe(half);
    expect(() => loadConfig({ PG_QUERY_TIMEOUT_MS: String(half + 1) })).toThrow(
      `PG_QUERY_TIMEOUT_MS: must be at most ${half} (ms)`,
    );
    expect(() => loadConfig({ PG_QUERY_TIMEOUT_MS: '1500000000' })).toThrow('PG_QUERY_TIMEOUT_MS');
    expect(() => loadPostgresConfig({ PG_QUERY_TIMEOUT_MS: '1500000000' })).toThrow('PG_QUERY_TIMEOUT_MS');
  });
});
