import { randomUUID } from 'node:crypto';
import { AgentCard, Message, Role, TaskState, type Part } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import {
  AgentEvent,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
  type AgentExecutor,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { at, type Links } from '../documents/links.ts';
import { jsonRpcTooDeep } from '../http/json-body.ts';
import { header, json, type RouteHandler } from '../http/route.ts';
import type { Caller, Invoke } from '../operations/invoke.ts';
import { PATH, TOOL_OPERATIONS } from '../operations/paths.ts';
import { BoundedTaskStore } from './task-store.ts';

/** The operations offered as A2A skills. */
export const A2A_SKILLS = TOOL_OPERATIONS.filter((op) => op.tool!.a2a);
const SKILL_NAMES = new Set(A2A_SKILLS.map((op) => op.tool!.name));

export interface A2aDeps {
  invoke: Invoke;
  /** The agent card as /.well-known/agent-card.json serves it. */
  card: Record<string, unknown>;
  links: Links;
}

const CALLER = 'agentnode.caller';
/** The version a request without an A2A-Version header speaks (A2A v1.0, section 3.6). */
export const LEGACY_VERSION = '0.3';
const decoder = new TextDecoder();

const dataPart = (value: unknown): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: 'application/json',
});
const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const reply = (context: RequestContext, parts: Part[]): Message => ({
  messageId: randomUUID(),
  contextId: context.contextId,
  taskId: '',
  role: Role.ROLE_AGENT,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** The `{skill, arguments}` a message asks for, from its first DataPart; null when it has none. */
function skillCall(message: Message): { skill: unknown; arguments: Record<string, unknown> } | null {
  for (const part of message.parts) {
    if (part.content?.$case !== 'data') continue;
    const value = part.content.value as { skill?: unknown; arguments?: unknown } | null;
    if (value && typeof value === 'object' && 'skill' in value) {
      const args =
        value.arguments && typeof value.arguments === 'object' && !Array.isArray(value.arguments)
          ? (value.arguments as Record<string, unknown>)
          : {};
      return { skill: value.skill, arguments: args };
    }
  }
  return null;
}

/**
 * Runs the skill a DataPart names through the same operation as HTTP and MCP. An answer is a
 * message with the operation's JSON as a DataPart; a refusal is a failed task whose status message
 * names the problem code and carries the problem as a DataPart (kept for GetTask without the
 * caller's message, which may hold a passport); a message without a skill gets a text reply naming
 * the skills and the convert payload.
 */
function executor(deps: A2aDeps): AgentExecutor {
  const help = `Send a DataPart {"skill": "<id>", "arguments": {...}}. Skills: ${[...SKILL_NAMES].join(', ')}. Start with the convert payload: ${at(deps.links.site, PATH.getConvert)}`;
  return {
    async execute(context, bus) {
      const caller = context.context.state.get(CALLER) as Caller;
      const call = skillCall(context.userMessage);
      const skill = typeof call?.skill === 'string' && SKILL_NAMES.has(call.skill) ? call.skill : null;
      if (!call || !skill) {
        const unknown = call ? `There is no skill ${JSON.stringify(call.skill)}. ` : '';
        bus.publish(AgentEvent.message(reply(context, [textPart(unknown + help)])));
        return bus.finished();
      }
      const answer = (await deps.invoke(skill, call.arguments, caller))!;
      if (answer.status < 400) {
        bus.publish(AgentEvent.message(reply(context, [dataPart(answer.body)])));
        return bus.finished();
      }
      const problem = answer.body as { code?: string; detail?: string };
      const status = {
        state: TaskState.TASK_STATE_FAILED,
        message: reply(context, [textPart(`${problem.code}: ${problem.detail}`), dataPart(problem)]),
        timestamp: new Date().toISOString(),
      };
      bus.publish(
        AgentEvent.task({
          id: context.taskId,
          contextId: context.contextId,
          status,
          artifacts: [],
          history: [],
          metadata: { problemCode: problem.code },
        }),
      );
      bus.finished();
    },
    async cancelTask() {
      // Every skill answers at once: there is nothing running to cancel.
    },
  };
}

/** A JSON-RPC request as parsed: its id answers every error; the SDK reads the rest. */
type RpcRequest = { id?: unknown; params?: { message?: Record<string, unknown> } };

/** The request's JSON, or its text when it is none (the SDK then answers the parse error). */
function parseRequest(body: Uint8Array): RpcRequest | string {
  const text = decoder.decode(body);
  try {
    const rpc: unknown = JSON.parse(text);
    return rpc !== null && typeof rpc === 'object' && !Array.isArray(rpc) ? (rpc as RpcRequest) : text;
  } catch {
    return text;
  }
}

const idOf = (rpc: RpcRequest | string) =>
  typeof rpc === 'object' && (typeof rpc.id === 'string' || typeof rpc.id === 'number') ? rpc.id : null;

/**
 * Streaming is not offered (capabilities.streaming is false). The SDK hands back a stream for
 * SendStreamingMessage and SubscribeToTask and throws UnsupportedOperationError only once it is
 * read: read here, so the error is answered in JSON-RPC instead of escaping as a 500.
 */
async function notStreamed(stream: AsyncIterable<unknown>): Promise<never> {
  for await (const _ of stream) break;
  throw new UnsupportedOperationError('Streaming is not offered by this agent: send SendMessage (v0.3: message/send).');
}

/**
 * A2A's JSON-RPC binding at POST /a2a, served by the official SDK's request handler and JSON-RPC
 * transport handlers, called from our route without a web framework: v1.0 (`SendMessage`, header
 * `A2A-Version: 1.0`) and, without the header, v0.3 (`message/send`), as the SDK's legacy
 * compatibility layer does. Every answer is one JSON-RPC body with HTTP 200, errors included.
 */
export function createA2aRoute(deps: A2aDeps): RouteHandler {
  const card = AgentCard.fromJSON(deps.card);
  const handler = new DefaultRequestHandler(card, new BoundedTaskStore(), executor(deps));
  const transport = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  return async (request) => {
    const caller: Caller = { client: request.client };
    const context = new ServerCallContext({
      state: new Map<string, unknown>([
        ['headers', request.headers],
        [CALLER, caller],
      ]),
      requestedVersion: header(request, 'a2a-version') || undefined,
    });
    const isLegacy = context.requestedVersion === LEGACY_VERSION;
    const deep = jsonRpcTooDeep(request.body);
    if (deep) return json(200, deep);
    const rpc = parseRequest(request.body);
    // A skill runs alone: no referenced task is read (the SDK would log each unknown id it was sent).
    if (typeof rpc === 'object' && rpc.params?.message && typeof rpc.params.message === 'object') {
      delete rpc.params.message.referenceTaskIds;
      delete rpc.params.message.reference_task_ids;
    }
    let answer: object;
    try {
      validateVersion(context.requestedVersion, card, 'JSONRPC');
      answer = await (isLegacy ? legacy.handle(rpc, context) : transport.handle(rpc, context));
      if (Symbol.asyncIterator in answer) answer = await notStreamed(answer as AsyncIterable<unknown>);
    } catch (error) {
      const mapped = isLegacy
        ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
        : JsonRpcTransportHandler.mapToJSONRPCError(error);
      answer = { jsonrpc: '2.0', id: idOf(rpc), error: mapped };
    }
    const routeAnswer = json(200, answer);
    return caller.step ? { ...routeAnswer, step: caller.step } : routeAnswer;
  };
}
