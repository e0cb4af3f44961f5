import pg from 'pg';
import type { Logger } from '../../log.ts';
import { StoreUnavailableError } from '../errors.ts';
import { span, tracingEnabled } from '../../tracing.ts';

/** How the service talks to PostgreSQL (PG_* in api/config.ts). */
export interface PostgresOptions {
  /** Connections kept at most. */
  poolSize: number;
  /** A connection, or a free one from the pool, not had within this long fails. */
  connectTimeoutMs: number;
  /** A transaction's statement_timeout (SET LOCAL); the client gives a statement up ANSWER_GRACE_MS later. */
  queryTimeoutMs: number;
  /** An unused pooled connection is closed after this long. */
  idleTimeoutMs: number;
  logger?: Logger | undefined;
  /** Why no call may go through yet (the schema is not known to be migrated), or null. */
  gate?: (() => Error | null) | undefined;
}

export const POSTGRES_DEFAULTS: PostgresOptions = {
  poolSize: 10,
  connectTimeoutMs: 1500,
  queryTimeoutMs: 2000,
  idleTimeoutMs: 10_000,
};

// PostgreSQL cancels a slow statement itself (57014, the connection stays usable); the client's own
// timer, a little later, is for when nothing comes back at all (a partition, a dead host).
const ANSWER_GRACE_MS = 500;

/**
 * The settings of every connection: a bounded wait for each step. No startup parameter beyond
 * user and database: PgBouncer in transaction pooling refuses the others (statement_timeout...),
 * and a connection it hands over may be another client's session a statement later. PostgreSQL's
 * own bounds are set per transaction instead (`transactionBounds`), and each statement is bounded
 * here by the client's timer.
 */
export function connectionSettings(connectionString: string, o: PostgresOptions): pg.ClientConfig {
  return {
    connectionString,
    connectionTimeoutMillis: o.connectTimeoutMs,
    query_timeout: o.queryTimeoutMs + ANSWER_GRACE_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

/**
 * What opens each transaction: BEGIN and its bounds, SET LOCAL so they end with it (through
 * PgBouncer the next transaction on this server connection may be another process's). PostgreSQL
 * cancels a slow statement itself (57014); a process that lost its connection mid-transaction
 * leaves it open on the server with its locks (the receipt log's advisory lock, an idempotency
 * key's row): PostgreSQL ends it. One round trip.
 */
export const transactionBounds = (o: Pick<PostgresOptions, 'queryTimeoutMs'>): string =>
  `BEGIN; SET LOCAL statement_timeout = ${Math.trunc(o.queryTimeoutMs)}; SET LOCAL idle_in_transaction_session_timeout = ${Math.trunc(2 * o.queryTimeoutMs)}`;

// SQLSTATE classes that mean "not now" rather than a bug: connection exceptions (08), insufficient
// resources (53: disk full, too many connections), operator intervention (57: shutdown, restart,
// statement timeout), system errors (58), a read-only transaction (25006), and serialization
// failures and deadlocks (40001, 40P01), which a retry resolves.
const NOT_NOW = /^(08|53|57|58)...$|^25006$|^40001$|^40P01$/;
// Errors of the driver and the socket, which carry no SQLSTATE: the connection is gone or silent.
const CONNECTION_LOST =
  /^Connection terminated|not queryable|^Query read timeout$|^timeout exceeded when trying to connect$|^timeout expired$/;
const SOCKET_CODE = /^(E[A-Z]+|ERR_STREAM_\w+|ERR_SOCKET_\w+)$/;

/** The SQLSTATE of an error PostgreSQL itself sent (an ErrorResponse), else null. */
const sqlState = (error: unknown): string | null => (error instanceof pg.DatabaseError ? (error.code ?? null) : null);
/** The connection failed or went silent (no answer from PostgreSQL at all). */
export const isConnectionLoss = (error: unknown): boolean =>
  error instanceof Error &&
  !(error instanceof pg.DatabaseError) &&
  (SOCKET_CODE.test(String((error as { code?: unknown }).code ?? '')) || CONNECTION_LOST.test(error.message));
/** PostgreSQL answered, but not now: the same request may work later. */
export const isNotNow = (error: unknown): boolean => NOT_NOW.test(sqlState(error) ?? '');

/** A connection failure in a few words, without a stack: the driver's message or the socket's code. */
export const reasonOf = (error: unknown): string =>
  error instanceof Error
    ? [(error as { code?: unknown }).code, error.message].filter((v) => typeof v === 'string' && v !== '').join(' ')
    : String(error);

/** Where a call was when it failed: what the client may assume follows from it. */
type Phase = 'connect' | 'statement' | 'commit';

/** A failure as the store's caller sees it: 503 with what is known of the write, or the error itself (a bug: 500). */
function mapped(error: unknown, phase: Phase): unknown {
  if (error instanceof StoreUnavailableError) return error;
  // Nothing was sent: whatever stopped the connection (refused, timed out, a full pool, a FATAL
  // such as too many connections or a database that takes none), nothing was done.
  if (phase === 'connect' || isNotNow(error)) return new StoreUnavailableError(error, 'database-unavailable');
  if (!isConnectionLoss(error)) return error;
  // Silence after a COMMIT (or a statement that commits itself) was sent: it may have committed.
  // A connection already known lost sends nothing ("not queryable").
  const sent = !(error instanceof Error && /not queryable/.test(error.message));
  return new StoreUnavailableError(error, phase === 'commit' && sent ? 'outcome-unknown' : 'database-unavailable');
}

/**
 * While PostgreSQL is known not to answer, calls fail at once instead of each waiting out the
 * timeouts (a request makes several); one call at a time goes through to learn whether it is
 * back, and its success opens the way for all.
 */
function createBreaker(logger: Logger | undefined, onChange?: (up: boolean) => void) {
  let down = false;
  let trialRunning = false;
  return {
    /** Throws when the database is down and another call is already finding out; true for that call. */
    enter(): boolean {
      if (!down) return false;
      if (trialRunning)
        throw new StoreUnavailableError(new Error('PostgreSQL did not answer the last call'), 'database-unavailable');
      trialRunning = true;
      return true;
    },
    leave(trial: boolean, outcome: 'answered' | 'silent' | 'other', error?: unknown): void {
      if (trial) trialRunning = false;
      if (outcome === 'answered' && down) {
        down = false;
        onChange?.(true);
        logger?.info('PostgreSQL answers again');
      } else if (outcome === 'silent' && !down) {
        down = true;
        onChange?.(false);
        // One line per outage, at error: what an on-call engineer pages on. An expected loss has no stack.
        logger?.error(
          { reason: reasonOf(error) },
          'PostgreSQL does not answer: what needs it answers 503 STORE_UNAVAILABLE until it does',
        );
      }
    },
  };
}

/** Where a session's work is: set to 'commit' just before the statement that commits is sent. */
export interface SessionState {
  phase: Phase;
}

/** The service's connection pool to PostgreSQL: every call bounded in time, every failure a 503 or a bug. */
export interface GuardedPool {
  /** One statement that changes nothing, or whose outcome does not matter when it fails. */
  query<R extends pg.QueryResultRow = any>(
    text: string | pg.QueryConfig,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  /** One statement that commits by itself: silence after it was sent makes its outcome unknown. */
  write<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** `work` on one connection; it sets `state.phase = 'commit'` before it sends a COMMIT. */
  session<T>(work: (client: pg.PoolClient, state: SessionState) => Promise<T>): Promise<T>;
  /** A new connection (not a pooled one) answers SELECT 1: what a new request would get. */
  reachable(): Promise<void>;
  /** What opens a transaction on a session's connection: BEGIN with its bounds (`transactionBounds`). */
  begin: string;
  /** The pool's connections now, and callers waiting for one (metrics). */
  stats(): { inUse: number; idle: number; waiting: number };
  /** False from a call that met silence until one is answered again (metrics). */
  up(): boolean;
  end(): Promise<void>;
}

const ignore = () => undefined;

/** A connection whose statements are spans (`pg.query`, with the SQL text: values are never in it). */
function tracedClient(client: pg.PoolClient): pg.PoolClient {
  return new Proxy(client, {
    get(target, property) {
      if (property === 'query')
        return (text: string | pg.QueryConfig, values?: unknown[]) =>
          span(
            'pg.query',
            { 'db.system': 'postgresql', 'db.statement': (typeof text === 'string' ? text : text.text).slice(0, 500) },
            () => (typeof text === 'string' ? target.query(text, values) : target.query(text)),
            3,
          );
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * A statement without its name: a named prepared statement lives in the server session that
 * prepared it, and PgBouncer in transaction pooling gives the next transaction another session
 * ("prepared statement already exists", "does not exist"). The write limiter names its statements.
 */
const unnamed = ({ name: _name, ...statement }: pg.QueryConfig): pg.QueryConfig => statement;

export function openPool(connectionString: string, options: Partial<PostgresOptions> = {}): GuardedPool {
  const o = { ...POSTGRES_DEFAULTS, ...options };
  const settings = connectionSettings(connectionString, o);
  const pool = new pg.Pool({ ...settings, max: o.poolSize, idleTimeoutMillis: o.idleTimeoutMs });
  // An idle connection that PostgreSQL ends (a restart, a failover, pg_terminate_backend) or the
  // network drops is reported here; without a listener it would end the process. The pool has
  // already let it go and opens another when one is needed.
  // Expected when PostgreSQL restarts: a debug line without a stack (the outage itself is one error line).
  pool.on('error', (error) => o.logger?.debug({ reason: reasonOf(error) }, 'PostgreSQL: an idle connection was lost'));
  // A connection checked out is no longer heard by the pool: its loss fails the statement running,
  // and the 'error' it also emits must find a listener. Attached at birth, as PostgreSQL may end a
  // connection in the very packet that made it ready, before its first user can listen.
  pool.on('connect', (client) => client.on('error', ignore));
  let answering = true;
  const breaker = createBreaker(o.logger, (up) => (answering = up));

  async function session<T>(work: (client: pg.PoolClient, state: SessionState) => Promise<T>): Promise<T> {
    const closed = o.gate?.();
    if (closed) throw new StoreUnavailableError(closed, 'database-unavailable');
    const trial = breaker.enter();
    const state: SessionState = { phase: 'connect' };
    let client: pg.PoolClient | undefined;
    try {
      client = await pool.connect();
      state.phase = 'statement';
      const result = await work(tracingEnabled() ? tracedClient(client) : client, state);
      breaker.leave(trial, 'answered');
      release(client);
      return result;
    } catch (error) {
      const silent = state.phase === 'connect' || (error instanceof Error && error.message === 'Query read timeout');
      breaker.leave(trial, silent ? 'silent' : sqlState(error) ? 'answered' : 'other', error);
      // A connection that failed is dropped, never handed to the next caller.
      if (client) release(client, isConnectionLoss(error) ? error : undefined);
      throw mapped(error, state.phase);
    }
  }
  const release = (client: pg.PoolClient, error?: unknown) =>
    client.release(error instanceof Error ? error : undefined);

  return {
    session,
    query: (text, values) =>
      session((client) => (typeof text === 'string' ? client.query(text, values) : client.query(unnamed(text)))),
    write: (text, values) =>
      session((client, state) => {
        state.phase = 'commit';
        return client.query(text, values);
      }),
    async reachable() {
      const closed = o.gate?.();
      if (closed) throw closed;
      const client = new pg.Client(settings);
      client.on('error', ignore);
      try {
        await client.connect();
        await client.query('SELECT 1');
      } catch (error) {
        // /readyz shows the reason: a fixed one, not the driver's (which may name hosts and databases).
        throw new Error('PostgreSQL does not take a new connection or does not answer on it', { cause: error });
      } finally {
        // Not awaited: a connection cut while ending would hold the probe.
        void client.end().catch(ignore);
      }
    },
    begin: transactionBounds(o),
    stats: () => ({
      inUse: pool.totalCount - pool.idleCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
    up: () => answering && !o.gate?.(),
    end: () => pool.end(),
  };
}
