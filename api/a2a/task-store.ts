import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { LRUCache } from 'lru-cache';

/**
 * The A2A door answers at once and keeps no conversation: only refused calls become tasks (failed,
 * terminal), and only the newest few are kept so GetTask can read them back. Memory stays bounded.
 */
export class BoundedTaskStore implements TaskStore {
  readonly #tasks: LRUCache<string, Task>;
  constructor(max = 256) {
    this.#tasks = new LRUCache({ max });
  }
  async save(task: Task, _context: ServerCallContext): Promise<void> {
    this.#tasks.set(task.id, task);
  }
  async load(taskId: string, _context: ServerCallContext): Promise<Task | undefined> {
    return this.#tasks.get(taskId);
  }
  async list(params: ListTasksRequest, _context: ServerCallContext): Promise<ListTasksResponse> {
    const pageSize = Math.min(Math.max(params.pageSize || 50, 1), 100);
    const tasks = [...this.#tasks.values()].slice(0, pageSize);
    return { tasks, nextPageToken: '', pageSize, totalSize: this.#tasks.size };
  }
}
