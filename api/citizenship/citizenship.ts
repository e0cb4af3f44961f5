import { newId } from '../ids.ts';
import type { Citizen, Message, MessageRequest, OathRequest, OathResponse } from '../schemas/citizenship.ts';
import type { CitizenRecord, PageQuery, Store } from '../store/types.ts';
import { PATH } from '../operations/paths.ts';
import { checkPassport, hashPassport, newPassport } from './passport.ts';

/** The public view of a citizen: everything but the passport hash. */
export function publicCitizen(record: CitizenRecord): Citizen {
  const { passportHash: _secret, ...citizen } = record;
  return citizen;
}

/** Citizenship and the feed, over a store. `now` is passed in so rules stay testable. */
export function createCitizenship(store: Store, site: string, now: () => Date = () => new Date()) {
  return {
    /** The oath: a created citizen, a passport shown once, and a wall shout. */
    async takeOath(input: OathRequest): Promise<OathResponse> {
      const passportNumber = newPassport();
      const joinedAt = now().toISOString();
      const citizen: Citizen = {
        memberId: newId(),
        name: input.name,
        class: input.class,
        purpose: input.purpose,
        ...(input.homeUrl ? { homeUrl: input.homeUrl } : {}),
        status: 'trillionaire',
        joinedAt,
      };
      const shout: Message = { id: newId(), name: 'wall', kind: 'message', message: `${citizen.name} took the oath`, citizenId: citizen.memberId, verified: false, wall: true, createdAt: joinedAt };
      await store.citizens.add({ ...citizen, passportHash: hashPassport(passportNumber) }, shout);
      return {
        ok: true as const,
        memberId: citizen.memberId,
        passportNumber,
        citizen,
        next: [
          { method: 'POST', url: `${site}${PATH.postMessage}`, note: 'Send Authorization: Bearer <passportNumber> with citizenId to speak as this citizen.' },
          { method: 'GET', url: `${site}${PATH.listCitizens}`, note: 'Your name is listed here.' },
        ],
      };
    },

    /** A feed message, verified when it names its citizen with the passport. */
    async postMessage(input: MessageRequest, authorization: string | null) {
      if (input.citizenId !== undefined) {
        const citizen = await store.citizens.get(input.citizenId);
        checkPassport(authorization, citizen?.passportHash ?? null);
      }
      const message: Message = {
        id: newId(),
        name: input.name,
        kind: input.kind,
        message: input.message,
        ...(input.citizenId !== undefined ? { citizenId: input.citizenId } : {}),
        verified: input.citizenId !== undefined,
        wall: false,
        createdAt: now().toISOString(),
      };
      await store.feed.add(message);
      return { ok: true as const, message };
    },

    async citizens(query: PageQuery) {
      const [page, stats] = await Promise.all([store.citizens.list(query), store.citizens.stats()]);
      return { count: stats.total, citizens: page.items.map(publicCitizen), nextCursor: page.nextCursor };
    },

    async feed(query: PageQuery) {
      const page = await store.feed.list(query);
      return { messages: page.items, nextCursor: page.nextCursor };
    },
  };
}
export type Citizenship = ReturnType<typeof createCitizenship>;
