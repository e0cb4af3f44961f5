import { describe, expect, it } from 'vitest';
import { createRouter } from '../../api/http/router.ts';

const handlers = { list: 'list', one: 'one', dotted: 'dotted' };
const paths = [
  { path: '/api/things', route: 'list' as const },
  { path: '/api/things/{id}', route: 'one' as const },
  { path: '/things.json', route: 'dotted' as const },
  { path: '/page' },
];

describe('createRouter', () => {
  const route = createRouter(paths, handlers);

  it('finds exact paths and ignores a trailing slash', () => {
    expect(route('/api/things')).toBe('list');
    expect(route('/api/things/')).toBe('list');
    expect(route('/things.json')).toBe('dotted');
  });

  it('matches a template segment, only one segment', () => {
    expect(route('/api/things/abc')).toBe('one');
    expect(route('/api/things/abc/def')).toBeUndefined();
    expect(route('/things_json')).toBeUndefined();
  });

  it('leaves paths without a route (pages) and unknown paths to the caller', () => {
    expect(route('/page')).toBeUndefined();
    expect(route('/api/nothing')).toBeUndefined();
  });

  it('refuses a handler that no path names, since it could never be reached', () => {
    const withOrphan: Record<string, string> = { ...handlers, orphan: 'orphan' };
    expect(() => createRouter(paths, withOrphan)).toThrow(/orphan/);
  });
});
