import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of the test's own (Debian's binaries, a temp folder, a free port, trust
 * authentication), so a test can restart it and terminate its backends without touching the
 * machine's server.
 */
export interface PgCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  adminUrl: string;
  port: number;
  /** A new empty database; its URL on the cluster's own port. */
  createDatabase(name: string): Promise<string>;
  /** Terminates every backend connected to `database` except the caller's; how many. */
  terminateBackends(database: string): Promise<number>;
  /** `pg_ctl restart -m fast`: every connection dropped, the server back when it resolves. */
  restart(): Promise<void>;
  /** `pg_ctl stop -m fast`: the server is down (connections refused) until `start`. */
  halt(): Promise<void>;
  /** Starts a halted server again; resolves when it takes connections. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The folder of Debian's PostgreSQL binaries (the newest major installed), or null. */
export function postgresBinaries(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const majors = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(root, majors[0], 'bin') : null;
}

/** True when a private cluster can be started; under CI=true missing binaries are an error, never a skip. */
export function clusterAvailable(): boolean {
  if (postgresBinaries()) return true;
  if (process.env.CI === 'true')
    throw new Error(
      "the PostgreSQL fault tests need Debian's postgresql package (initdb, pg_ctl under /usr/lib/postgresql)",
    );
  console.warn(
    '\n*** No PostgreSQL binaries under /usr/lib/postgresql: the PostgreSQL fault tests are skipped (apt-get install postgresql). ***\n',
  );
  return false;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** initdb refuses root: as root the cluster belongs to the `postgres` OS user. */
function asOwner(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

export async function startCluster(): Promise<PgCluster> {
  const bin = postgresBinaries();
  if (!bin) throw new Error('no PostgreSQL binaries');
  const dir = mkdtempSync(join(tmpdir(), 'agentnode-pg-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = await ownerOf('postgres');
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const port = await freePort();
  const pgCtl = (...args: string[]) =>
    run(...asOwner(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', ...args]));
  await run(
    ...asOwner(join(bin, 'initdb'), [
      '-D',
      data,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
    ]),
  );
  // No fsync: the tests cut connections, not power. The socket lives in the temp folder, not /run.
  const start = () =>
    pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`, 'start');
  await start();
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  return {
    adminUrl,
    port,
    createDatabase: (name) =>
      admin(async (c) => void (await c.query(`CREATE DATABASE ${name}`))).then(
        () => `postgres://postgres@127.0.0.1:${port}/${name}`,
      ),
    terminateBackends: (database) =>
      admin(
        async (c) =>
          (
            await c.query(
              'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
              [database],
            )
          ).rowCount ?? 0,
      ),
    restart: async () => void (await pgCtl('-m', 'fast', 'restart')),
    halt: async () => void (await pgCtl('-m', 'fast', 'stop')),
    start: async () => void (await start()),
    stop: async () => {
      await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function ownerOf(user: string): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** What the relay does with bytes and connections. */
export type RelayMode =
  /** Forwards both ways. */
  | 'forward'
  /** A partition: accepts connections, forwards nothing either way, keeps every socket open (closes wait too). */
  | 'hold'
  /** Forwards what the client sends, holds the answers: the server does the work, the client never hears. */
  | 'hold-answers'
  /** New connections are reset at once; open ones go on forwarding. */
  | 'refuse';

/**
 * A TCP relay on loopback between the service and PostgreSQL that the test controls: a
 * partition that leaves sockets open, a one-way partition, refused connections, resets.
 */
export interface Relay {
  port: number;
  /** Connections open now. */
  open(): number;
  /** Connections forwarded since the relay started. */
  opened(): number;
  /** Applies to every connection (and ends the holds `cutAt` set). */
  set(mode: RelayMode): void;
  /**
   * The connection that sends `text` is held from that message on, as `hold` says (the message
   * itself is held with 'hold'), until the next `set`: a cut at an exact point of a conversation.
   */
  cutAt(text: string, hold: 'hold' | 'hold-answers'): void;
  /** Resets (RST) every open connection; new ones are forwarded as the mode says. */
  reset(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** This connection's own hold (set by a cut), over the relay's mode. */
  mode: RelayMode | null;
  /** Bytes held per direction while the mode holds them. */
  toServer: Buffer[];
  toClient: Buffer[];
  /** A side that closed: like its bytes, the news reaches the other side only when its direction flows. */
  clientGone: boolean;
  upstreamGone: boolean;
}

/** A relay in front of the database `url` names, and the same URL through it. */
export async function relayTo(url: string): Promise<{ relay: Relay; through: string }> {
  const relay = await startRelay(Number(new URL(url).port || 5432));
  const through = new URL(url);
  through.port = String(relay.port);
  return { relay, through: through.href };
}

/**
 * A store on the database `url` names, reached through a relay a test can silence, with pool
 * bounds short enough to wait out (connect 400 ms, query 300 ms).
 */
export async function storeThroughRelay(
  url: string,
): Promise<{ relay: Relay; store: Awaited<ReturnType<typeof openPostgresStore>> }> {
  const { relay, through } = await relayTo(url);
  const store = await openPostgresStore(through, { connectTimeoutMs: 400, queryTimeoutMs: 300, idleTimeoutMs: 60_000 });
  return { relay, store };
}

export async function startRelay(target: number): Promise<Relay> {
  let mode: RelayMode = 'forward';
  let cut: { text: Buffer; hold: RelayMode } | null = null;
  const pairs = new Set<Pair>();
  let opened = 0;
  const holdsToServer = (pair: Pair) => (pair.mode ?? mode) === 'hold';
  const holdsToClient = (pair: Pair) => ['hold', 'hold-answers'].includes(pair.mode ?? mode);

  /** Delivers what each flowing direction holds, then the close of a side that left. */
  const flush = (pair: Pair) => {
    if (!holdsToServer(pair)) {
      if (!pair.upstream && !pair.clientGone) connectUpstream(pair);
      for (const b of pair.toServer.splice(0)) pair.upstream?.write(b);
      if (pair.clientGone) pair.upstream?.end();
    }
    if (!holdsToClient(pair)) {
      for (const b of pair.toClient.splice(0)) pair.client.write(b);
      if (pair.upstreamGone) pair.client.end();
    }
    if (pair.clientGone && (pair.upstreamGone || !pair.upstream)) pairs.delete(pair);
  };
  function connectUpstream(pair: Pair) {
    const upstream = new Socket();
    pair.upstream = upstream;
    upstream.connect(target, '127.0.0.1');
    upstream.on('data', (b: Buffer) => (holdsToClient(pair) ? pair.toClient.push(b) : pair.client.write(b)));
    upstream.on('error', () => undefined);
    upstream.on('close', () => {
      pair.upstreamGone = true;
      flush(pair);
    });
  }

  const server: Server = createServer((client) => {
    if (mode === 'refuse') return void client.resetAndDestroy();
    const pair: Pair = {
      client,
      upstream: null,
      mode: null,
      toServer: [],
      toClient: [],
      clientGone: false,
      upstreamGone: false,
    };
    pairs.add(pair);
    opened++;
    client.on('data', (b: Buffer) => {
      if (cut && b.includes(cut.text)) {
        pair.mode = cut.hold;
        cut = null;
      }
      if (holdsToServer(pair) || !pair.upstream) pair.toServer.push(b);
      else pair.upstream.write(b);
    });
    client.on('error', () => undefined);
    client.on('close', () => {
      pair.clientGone = true;
      flush(pair);
    });
    // In a partition the connection is accepted (as a switch or a proxy would) and goes nowhere.
    flush(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const reset = () => {
    for (const pair of pairs) {
      pair.client.resetAndDestroy();
      pair.upstream?.resetAndDestroy();
    }
    pairs.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    open: () => pairs.size,
    opened: () => opened,
    set(next) {
      mode = next;
      cut = null;
      for (const pair of pairs) {
        pair.mode = null;
        flush(pair);
      }
    },
    cutAt(text, hold) {
      cut = { text: Buffer.from(text), hold };
    },
    reset,
    async close() {
      reset();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
