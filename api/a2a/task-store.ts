import { Role, type ListTasksRequest, type ListTasksResponse, type Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { LRUCache } from 'lru-cache';

/**
 * What is kept of a task: its id, context, state and the agent's own status message (the problem
 * it answered), never a message of the caller's. The SDK's ResultManager puts the caller's message
 * (a `post_message` carries its passport) at the head of `history` before saving: it stays out.
 */
function keptTask(task: Task): Task {
  const status = task.status && {
    state: task.status.state,
    timestamp: task.status.timestamp,
    message: task.status.message?.role === Role.ROLE_AGENT ? task.status.message : undefined,
  };
  const problemCode = task.metadata?.problemCode;
  return {
    id: task.id,
    contextId: task.contextId,
    status,
    artifacts: [],
    history: [],
    metadata: typeof problemCode === 'string' ? { problemCode } : undefined,
  };
}

/**
 * The A2A door answers at once and keeps no conversation: only refused calls become tasks (failed,
 * terminal), and only the newest few are kept so GetTask can read them back. A task is read by its
 * id alone, a random UUID that only its creator is told; nobody can list them (there is no caller
 * to list them for: the door has no authentication). Memory stays bounded.
 */
export class BoundedTaskStore implements TaskStore {
  readonly #tasks: LRUCache<string, Task>;
  constructor(max = 256) {
    this.#tasks = new LRUCache({ max });
  }
  async save(task: Task, _context: ServerCallContext): Promise<void> {
    this.#tasks.set(task.id, keptTask(task));
  }
  async load(taskId: string, _context: ServerCallContext): Promise<Task | undefined> {
    // A copy: the SDK trims and merges what it loads in place.
    const task = this.#tasks.get(taskId);
    return task && structuredClone(task);
  }
  async list(params: ListTasksRequest, _context: ServerCallContext): Promise<ListTasksResponse> {
    // A2A scopes ListTasks to the caller; an unauthenticated caller owns no task it could be shown.
    return { tasks: [], nextPageToken: '', pageSize: params.pageSize || 50, totalSize: 0 };
  }
}
