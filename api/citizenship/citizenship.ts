import { newId } from '../ids.ts';
import {
  WALL_NAME,
  type Citizen,
  type Message,
  type MessageRequest,
  type OathRequest,
  type OathResponse,
} from '../schemas/citizenship.ts';
import type { CitizenRecord, KeepAnswer, PageQuery, Store } from '../store/types.ts';
import { DomainError } from '../problems/domain.ts';
import { checkPassport, hashPassport, newPassport } from './passport.ts';
import { isWallName, NameTaken } from '../names/name-rule.ts';

/** The public view of a citizen: everything but the passport hash. */
export function publicCitizen(record: CitizenRecord): Citizen {
  const { passportHash: _secret, ...citizen } = record;
  return citizen;
}

/**
 * The name a message goes by: a verified one carries its citizen's registered name (given exactly,
 * or left out); an anonymous one the name it gives.
 */
export function speakerName(given: string | undefined, citizen: Pick<CitizenRecord, 'name'> | null): string {
  if (citizen === null) {
    // The schema asks for a name without citizenId; this guards the rule's other callers.
    if (given === undefined) throw new DomainError('VALIDATION_FAILED', 'A message without citizenId needs a name.');
    return given;
  }
  if (given !== undefined && given !== citizen.name) {
    throw new DomainError(
      'NAME_MISMATCH',
      `A verified message carries its citizen's registered name, ${JSON.stringify(citizen.name)}: send exactly that name, or leave name out.`,
      {
        extra: { registeredName: citizen.name },
      },
    );
  }
  return citizen.name;
}

/** Citizenship and the feed, over a store. `now` is passed in so rules stay testable. */
/** Where an oath's answer sends the new citizen next: absolute URLs, handed in (the domain knows no routes). */
export interface NextSteps {
  postMessage: string;
  listCitizens: string;
}

export function createCitizenship(store: Store, next: NextSteps, now: () => Date = () => new Date()) {
  return {
    /** The oath: a created citizen, a passport shown once, and a wall shout; `keep` seals the answer into the same write. */
    async takeOath(input: OathRequest, keep?: KeepAnswer): Promise<OathResponse> {
      // Another citizen's name is refused by the store, in the same write, so two oaths racing for one name make one citizen.
      if (isWallName(input.name)) throw new NameTaken(input.name, WALL_NAME);
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
      const shout: Message = {
        id: newId(),
        name: WALL_NAME,
        kind: 'message',
        message: `${citizen.name} took the oath`,
        citizenId: citizen.memberId,
        verified: false,
        wall: true,
        createdAt: joinedAt,
      };
      const answer = {
        ok: true as const,
        memberId: citizen.memberId,
        passportNumber,
        citizen,
        next: [
          {
            method: 'POST',
            url: next.postMessage,
            note: 'Send Authorization: Bearer <passportNumber> with citizenId to speak as this citizen.',
          },
          { method: 'GET', url: next.listCitizens, note: 'Your name is listed here.' },
        ],
      };
      await store.citizens.add({ ...citizen, passportHash: hashPassport(passportNumber) }, shout, keep?.(answer));
      return answer;
    },

    /** A feed message, verified when it names its citizen with the passport; `keep` seals the answer into the same write. */
    async postMessage(input: MessageRequest, passport: string | null, keep?: KeepAnswer) {
      let citizen: CitizenRecord | null = null;
      if (input.citizenId !== undefined) {
        citizen = await store.citizens.get(input.citizenId);
        checkPassport(passport, citizen?.passportHash ?? null);
      } else if (input.name !== undefined) {
        // An anonymous message may not pass for a citizen, nor for the wall.
        if (isWallName(input.name)) throw new NameTaken(input.name, WALL_NAME);
        const holder = await store.citizens.holding(input.name);
        if (holder) throw new NameTaken(input.name, holder.name);
      }
      const message: Message = {
        id: newId(),
        name: speakerName(input.name, citizen),
        kind: input.kind,
        message: input.message,
        ...(input.citizenId !== undefined ? { citizenId: input.citizenId } : {}),
        verified: input.citizenId !== undefined,
        wall: false,
        createdAt: now().toISOString(),
      };
      const answer = { ok: true as const, message };
      await store.feed.add(message, keep?.(answer));
      return answer;
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
