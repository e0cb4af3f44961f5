import type { LedgerRange } from '../telemetry/ledger/ranges.ts';
import type { Citizenship } from '../citizenship/citizenship.ts';
import type { RouteHandler, RouteRequest } from '../http/route.ts';
import type { Omip } from '../omip/service.ts';

/**
 * What handlers work with: the domain services, built once by createEngine (api/engine.ts).
 * Handlers in the operation table call these and nothing else, so the table imports no service.
 */
export interface OperationContext {
  citizenship: Citizenship;
  omip: Omip;
  /** Live documents built from the store and telemetry. */
  views: {
    scoreboard(): Promise<unknown>;
    livingLattice(): Promise<unknown>;
    botTraffic(): Promise<unknown>;
    botWall(): Promise<unknown>;
    /** GET /bot-wall.csv for a range whose buckets the ledger keeps. */
    botWallCsv(range: LedgerRange): Promise<string>;
    health(): Promise<unknown>;
  };
  /** Prebuilt documents, built again for the MCP tools and A2A skills that read them. */
  documents: { convert(): Promise<unknown>; kit(): Promise<unknown>; whatsNext(): Promise<unknown> };
  /** The log ingest (api/telemetry/log-formats): records of any supported format into the bot ledger. */
  ingestLogs: RouteHandler;
  /** The audio ingress: JSON metadata, an audio file or multipart. */
  ingress(request: RouteRequest): Promise<unknown>;
  /** The protocol doors, which call the other operations. */
  mcp: RouteHandler;
  a2a: RouteHandler;
}
