/** Request and response shapes of the ES surface (no HTTP framework types). */
export type Params = Record<string, string | undefined>;

export interface EsRequest {
  readonly method: string;
  /** The path after the `/es` prefix, without the query string (`/`, `/idx/_doc/1`). */
  readonly path: string;
  readonly query: Params;
  /** Parsed JSON body, the raw text of an NDJSON body, or undefined. */
  readonly body: unknown;
}

export interface EsResponse {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}
